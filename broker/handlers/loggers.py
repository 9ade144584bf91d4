"""BROKER_LOGGER resources (KIP-412) on Python's logging, as Kafka's
RuntimeLoggerManager / Log4jController do on log4j.

Logger names are Python logger names (``minikafka.storage``, ...) plus ``root``.
Levels use log4j's names: FATAL, ERROR, WARN, INFO, DEBUG, TRACE (TRACE maps to
Python level 5, FATAL to CRITICAL). Changes last until the broker restarts, as in
Kafka (they are not persisted).
"""
from __future__ import annotations

import logging

from minikafka.protocol.errors import ErrorCode, KafkaError

ROOT_LOGGER = "root"
TRACE = 5
TO_PY = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
         "DEBUG": logging.DEBUG, "TRACE": TRACE}
VALID_LOG_LEVELS_STRING = ", ".join(sorted(TO_PY))
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def level_name(level: int) -> str:
    for name, lv in sorted(TO_PY.items(), key=lambda kv: kv[1]):
        if level <= lv:
            return name
    return "FATAL"


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)


def loggers() -> dict[str, str]:
    """Every existing logger with its effective level (Log4jController.loggers)."""
    out = {ROOT_LOGGER: level_name(logging.getLogger().getEffectiveLevel())}
    for name, lg in sorted(logging.root.manager.loggerDict.items()):
        if isinstance(lg, logging.Logger):
            out[name] = level_name(lg.getEffectiveLevel())
    return out


def logger_exists(name: str) -> bool:
    return name == ROOT_LOGGER or isinstance(logging.root.manager.loggerDict.get(name), logging.Logger)


def check_node(ctx, name: str) -> None:
    try:
        node = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if node != ctx.node_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {ctx.node_id}, but received {name}")


def _validate(configs) -> None:
    for c in configs:
        op = c.config_operation
        if op in (SET, DELETE):
            if not logger_exists(c.name):
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!")
            if op == SET and c.value not in TO_PY:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Cannot set the log level of {c.name} to {c.value} as it is not a supported "
                                 f"log level. Valid log levels are {VALID_LOG_LEVELS_STRING}")
            if op == DELETE and c.name == ROOT_LOGGER:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
        elif op == APPEND:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")
        elif op == SUBTRACT:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource")
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")


def apply(ctx, resource_name: str, configs, validate_only: bool) -> None:
    """RuntimeLoggerManager.applyChangesForResource."""
    check_node(ctx, resource_name)
    _validate(configs)
    if validate_only:
        return
    log = logging.getLogger("minikafka.broker")
    for c in configs:
        if c.config_operation == SET:
            _logger(c.name).setLevel(TO_PY[c.value])
            log.warning("Updated the log level of %s to %s", c.name, c.value)
        else:
            _logger(c.name).setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", c.name)
