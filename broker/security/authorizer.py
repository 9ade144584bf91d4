"""ACL authorization with the semantics of Kafka's StandardAuthorizer
(``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``).

A request is allowed when the principal is a super user; else denied when a DENY ACL
matches (resource, principal or User:*, host or *, the operation or ALL); else allowed when an
ALLOW ACL matches (ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE, ALLOW of ALTER_CONFIGS
implies DESCRIBE_CONFIGS); else, when no ACL at all names the resource,
``allow.everyone.if.no.acl.found`` decides; else denied. An ACL names a resource by a literal
name (``*`` is every resource of its type) or by a prefix.
"""
from __future__ import annotations

from dataclasses import dataclass

# Kafka's AclOperation, ResourceType, PatternType, AclPermissionType codes
OP = {"UNKNOWN": 0, "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
      "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11,
      "IDEMPOTENT_WRITE": 12, "CREATE_TOKENS": 13, "DESCRIBE_TOKENS": 14, "TWO_PHASE_COMMIT": 15}
RESOURCE = {"UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5,
            "DELEGATION_TOKEN": 6, "USER": 7}
PATTERN = {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
PERMISSION = {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, TWO_PHASE_COMMIT = 9, 10, 11, 12, 15
ALL, ANY = 2, 1
LITERAL, PREFIXED, MATCH = 3, 4, 2
DENY, ALLOW = 2, 3
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

# what ALLOW of an operation also allows (Kafka's AclEntry / StandardAuthorizerData)
IMPLIED_BY = {DESCRIBE: (READ, WRITE, DELETE, ALTER), DESCRIBE_CONFIGS: (ALTER_CONFIGS,)}
# operations reported in authorized-operations bit fields (KIP-430), per resource type
SUPPORTED_OPS = {
    TOPIC: (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE),
}
AUTHORIZER_CLASS = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def to_json(self) -> list:
        return [self.resource_type, self.resource_name, self.pattern_type, self.principal, self.host,
                self.operation, self.permission]


def validate_binding(b: AclBinding) -> str | None:
    """Why CreateAcls refuses this binding (Kafka's InvalidRequestException messages), or None."""
    if b.resource_type not in (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, 6, 7):
        return "Invalid resourceType " + str(b.resource_type)
    if b.pattern_type not in (LITERAL, PREFIXED):
        return "Invalid patternType " + str(b.pattern_type)
    if b.operation in (0, ANY) or b.operation not in OP.values():
        return "Invalid operation " + str(b.operation)
    if b.permission not in (DENY, ALLOW):
        return "Invalid permissionType " + str(b.permission)
    if not b.resource_name:
        return "Resource name must not be empty"
    if b.resource_type == CLUSTER and b.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is " + CLUSTER_NAME
    kind, colon, name = (b.principal or "").partition(":")
    if not colon or not kind or not name:
        return (f"Could not parse principal from `{b.principal}` "
                "(no colon is present separating the principal type from the principal name)")
    if not b.host:
        return "Invalid host"
    return None


def filter_matches(f: dict, b: AclBinding) -> bool:
    """Kafka's AclBindingFilter.matches (DescribeAcls, DeleteAcls)."""
    if f["resource_type"] != ANY and f["resource_type"] != b.resource_type:
        return False
    name, pattern = f["resource_name"], f["pattern_type"]
    if pattern == MATCH:
        if name is not None and not (
                (b.pattern_type == LITERAL and b.resource_name in (name, WILDCARD))
                or (b.pattern_type == PREFIXED and name.startswith(b.resource_name))):
            return False
    else:
        if pattern != ANY and pattern != b.pattern_type:
            return False
        if name is not None and name != b.resource_name:
            return False
    if f["principal"] is not None and f["principal"] != b.principal:
        return False
    if f["host"] is not None and f["host"] != b.host:
        return False
    if f["operation"] != ANY and f["operation"] != b.operation:
        return False
    if f["permission"] != ANY and f["permission"] != b.permission:
        return False
    return True


class Authorizer:
    def __init__(self, bindings, super_users: set[str], allow_if_no_acl: bool):
        self.bindings: list[AclBinding] = list(bindings)
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl

    def _resource_acls(self, resource_type: int, name: str):
        for b in self.bindings:
            if b.resource_type != resource_type:
                continue
            if b.pattern_type == LITERAL and b.resource_name in (name, WILDCARD):
                yield b
            elif b.pattern_type == PREFIXED and name.startswith(b.resource_name):
                yield b

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        found = False
        allowed = False
        implied = IMPLIED_BY.get(operation, ())
        for b in self._resource_acls(resource_type, name):
            found = True
            if b.principal not in (principal, WILDCARD_PRINCIPAL) or b.host not in (host, WILDCARD):
                continue
            if b.permission == DENY and b.operation in (operation, ALL):
                return False
            if b.permission == ALLOW and (b.operation in (operation, ALL) or b.operation in implied):
                allowed = True
        return allowed or (not found and self.allow_if_no_acl)

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Kafka's authorizeByResourceType: is ``operation`` allowed on at least one resource of
        the type (an ALLOW literal or prefixed ACL not cancelled by a DENY of the same or wider scope)."""
        if principal in self.super_users:
            return True
        mine = [b for b in self.bindings if b.resource_type == resource_type
                and b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, WILDCARD)
                and b.operation in (operation, ALL)]
        denied_all = any(b.permission == DENY and b.pattern_type == LITERAL and b.resource_name == WILDCARD for b in mine)
        if denied_all:
            return False
        denies = [b for b in mine if b.permission == DENY]
        for b in mine:
            if b.permission != ALLOW:
                continue
            covered = any((d.pattern_type == LITERAL and d.resource_name == b.resource_name and b.pattern_type == LITERAL)
                          or (d.pattern_type == PREFIXED and b.resource_name.startswith(d.resource_name))
                          for d in denies)
            if not covered:
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        bits = 0
        for op in SUPPORTED_OPS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op
        return bits


def parse_super_users(text: str) -> set[str]:
    return {x.strip() for x in (text or "").split(";") if x.strip()}
