"""One poll of the cluster, through Kafka's APIs only, in a few rounds of pipelined requests:

1. Metadata (brokers, topics, partition leaders).
2. Per leader: ListOffsets latest read_uncommitted (HWM) and latest read_committed (LSO) of
   every partition (and earliest, the log start, every ``FULL_EVERY`` polls); per broker: ListTransactions (the open ones;
   all ids every ``FULL_EVERY`` polls) and ListGroups; Fetch of ``__transaction_state``.
3. FindCoordinator for ids and groups not seen before (cached).
4. DescribeProducers of the partitions whose LSO lags their HWM (of all partitions every
   ``FULL_EVERY`` polls), DescribeTransactions of the open ids, and per group coordinator
   DescribeGroups / ConsumerGroupDescribe and OffsetFetch.
5. KIP-664: the open transactions of step 4 whose producer no coordinator lists as open on
   that partition; ListTransactions by producer id and DescribeTransactions name their ids.
6. Read_committed lag scans (lag.py).

A failure of one request is reported in the snapshot's ``errors``; the rest is shown."""
from __future__ import annotations

import time

from minikafka.protocol.errors import ErrorCode

from .client import (CONSUMER_GROUP_DESCRIBE, DESCRIBE_GROUPS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS,
                     FIND_COORDINATOR, LIST_GROUPS, LIST_OFFSETS, LIST_TRANSACTIONS, OFFSET_FETCH, Call, Cluster,
                     ClusterError, by_topic, error_name, list_offsets_body)
from .lag import LagScanner
from .model import (OPEN_STATES, Group, GroupPartition, History, OpenTxn, PartitionState, Producer, Snapshot,
                    TxnInfo)
from .txnlog import TOPIC as TXN_TOPIC
from .txnlog import TxnLogReader

FULL_EVERY = 10
GROUP_KEY, TXN_KEY = 0, 1
COORDINATOR_ERRORS = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


def now_ms() -> int:
    return int(time.time() * 1000)


class Collector:
    """Polls one cluster; ``poll()`` returns a new Snapshot. Used by one thread at a time."""

    def __init__(self, cluster: Cluster, history: History | None = None, lag: LagScanner | None = None,
                 txnlog: TxnLogReader | None = None):
        self.cluster = cluster
        self.history = history or History()
        self.lag = lag or LagScanner()
        self.txnlog = txnlog or TxnLogReader()
        self.seq = 0
        self.coordinators: dict[tuple[int, str], int] = {}
        self.producers: dict[tuple[str, int], tuple[int, list[Producer]]] = {}  # when described, what
        self.all_transactions: dict[str, tuple[str, int]] = {}  # id -> (state, producer id), last full list
        self.suspects: set[tuple[str, int, int, int]] = set()  # open txns no coordinator listed last poll
        self.log_starts: dict[tuple[str, int], int] = {}

    # ------------------------------------------------------------------ the poll
    def poll(self) -> Snapshot:
        t0 = time.perf_counter()
        self.seq += 1
        full = self.seq % FULL_EVERY == 1
        snap = Snapshot(seq=self.seq, time_ms=now_ms(), poll_ms=0.0, bootstrap=",".join(self.cluster.bootstrap))
        try:
            self._poll(snap, full)
        except ClusterError as e:
            snap.errors.append(str(e))
        snap.poll_ms = (time.perf_counter() - t0) * 1000
        self.history.add(snap.time_ms, snap.partitions)
        return snap

    def _poll(self, snap: Snapshot, full: bool) -> None:
        meta = self.cluster.metadata()
        snap.cluster_id, snap.controller = meta.get("cluster_id"), meta.get("controller_id")
        snap.brokers = dict(self.cluster.nodes)
        txn_leaders: dict[int, int] = {}
        for t in meta.topics:
            if t.error_code:
                snap.errors.append(f"topic {t.name}: {error_name(t.error_code)}")
                continue
            for p in t.partitions:
                snap.partitions[(t.name, p.partition_index)] = PartitionState(
                    t.name, p.partition_index, p.leader_id, bool(t.is_internal),
                    error=error_name(p.error_code) if p.error_code else None)
                if t.name == TXN_TOPIC:
                    txn_leaders[p.partition_index] = p.leader_id
        brokers = sorted(snap.brokers)

        # round 2: offsets, transactions and groups lists, the transaction log
        calls: list[Call] = []
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for key, p in snap.partitions.items():
            if p.leader >= 0:
                by_leader.setdefault(p.leader, []).append(key)
            elif p.error is None:
                p.error = "no leader"
        # the log start moves only with retention and DeleteRecords: asked every FULL_EVERY polls
        # (a third of a poll's cost on the broker), as last seen in between
        wanted = (("hwm", -1, 0), ("lso", -1, 1)) + ((("log_start", -2, 0),) if full else ())
        for node, keys in by_leader.items():
            for what, ts, iso in wanted:
                calls.append(Call(node, LIST_OFFSETS, list_offsets_body(keys, ts, iso), tag=what))
        if not full:
            for key, ps in snap.partitions.items():
                ps.log_start = self.log_starts.get(key)
        states = [] if full else list(OPEN_STATES)
        for node in brokers:
            calls.append(Call(node, LIST_TRANSACTIONS, {"state_filters": states, "producer_id_filters": [],
                                                        "duration_filter": -1}, tag="txns"))
            calls.append(Call(node, LIST_GROUPS, {"states_filter": [], "types_filter": []}, tag="groups"))
        txnlog_calls = self.txnlog.calls(txn_leaders)
        self.cluster.pipeline(calls + txnlog_calls)
        listed: dict[str, tuple[str, int]] = {}
        groups: dict[str, Group] = {}
        for call in calls:
            if call.error is not None:
                snap.errors.append(f"{call.tag}: {call.error}")
                continue
            r = call.response
            if call.tag in ("hwm", "lso", "log_start"):
                for t in r.topics:
                    for p in t.partitions:
                        ps = snap.partitions.get((t.name, p.partition_index))
                        if ps is None:
                            continue
                        if p.error_code:
                            ps.error = ps.error or error_name(p.error_code)
                        else:
                            setattr(ps, call.tag, p.offset)
            elif call.tag == "txns":
                if r.error_code:
                    snap.errors.append(f"ListTransactions (broker {call.node}): {error_name(r.error_code)}")
                for s in r.transaction_states:
                    listed[s.transactional_id] = (s.transaction_state, s.producer_id)
            elif call.tag == "groups":
                if r.error_code:
                    snap.errors.append(f"ListGroups (broker {call.node}): {error_name(r.error_code)}")
                for g in r.groups:
                    groups[g.group_id] = Group(g.group_id, g.get("group_type") or "classic", g.protocol_type,
                                               g.get("group_state") or "", None)
        self.log_starts = {k: p.log_start for k, p in snap.partitions.items() if p.log_start is not None}
        self.txnlog.apply(txnlog_calls, {p: snap.partitions[(TXN_TOPIC, p)].log_start for p in txn_leaders})
        snap.timelines = self.txnlog.snapshot()
        snap.timelines_error = self.txnlog.error
        if full:
            self.all_transactions = dict(listed)
            # coordinators of ids and groups that are gone are forgotten
            self.coordinators = {k: v for k, v in self.coordinators.items()
                                 if (k[0] == TXN_KEY and k[1] in listed) or (k[0] == GROUP_KEY and k[1] in groups)}
        else:
            # ids that are open now, over the last full list (which may be up to FULL_EVERY polls old)
            for tid, (state, pid) in self.all_transactions.items():
                if tid not in listed and state in OPEN_STATES:
                    self.all_transactions[tid] = ("", pid)  # no longer open; state known at the next full list
            self.all_transactions.update(listed)
        open_ids = sorted(tid for tid, (state, _) in listed.items() if state in OPEN_STATES)

        # round 3: coordinators not known yet
        self._find_coordinators(snap, TXN_KEY, open_ids)
        self._find_coordinators(snap, GROUP_KEY, sorted(groups))

        # round 4: producers, open transactions, groups' members and offsets
        now = now_ms()
        calls = []
        describe = [k for k, p in snap.partitions.items() if p.leader >= 0 and (full or p.pinned)]
        by_leader = {}
        for key in describe:
            by_leader.setdefault(snap.partitions[key].leader, []).append(key)
        for node, keys in by_leader.items():
            calls.append(Call(node, DESCRIBE_PRODUCERS, {"topics": [{"name": t, "partition_indexes": ps}
                                                                    for t, ps in by_topic(keys).items()]},
                              tag="producers"))
        calls += self._describe_transactions_calls(open_ids)
        for node, ids in self._by_coordinator(GROUP_KEY, sorted(groups)).items():
            classic = [g for g in ids if groups[g].group_type != "consumer"]
            consumer = [g for g in ids if groups[g].group_type == "consumer"]
            if classic:
                calls.append(Call(node, DESCRIBE_GROUPS, {"groups": classic}, tag="describe_groups"))
            if consumer:
                calls.append(Call(node, CONSUMER_GROUP_DESCRIBE, {"group_ids": consumer}, tag="consumer_groups"))
            calls.append(Call(node, OFFSET_FETCH, {"groups": [{"group_id": g, "member_id": None, "member_epoch": -1,
                                                               "topics": None} for g in ids],
                                                   "require_stable": False}, tag="offsets"))
        self.cluster.pipeline(calls)
        described = set()
        committed: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}
        for call in calls:
            if call.error is not None:
                snap.errors.append(f"{call.tag}: {call.error}")
                continue
            r = call.response
            if call.tag == "producers":
                for t in r.topics:
                    for p in t.partitions:
                        key = (t.name, p.partition_index)
                        if p.error_code:
                            ps = snap.partitions.get(key)
                            if ps is not None:
                                ps.error = ps.error or f"DescribeProducers: {error_name(p.error_code)}"
                            continue
                        described.add(key)
                        self.producers[key] = (now, [Producer(a.producer_id, a.producer_epoch, a.last_sequence,
                                                              a.last_timestamp, a.coordinator_epoch,
                                                              a.current_txn_start_offset)
                                                     for a in p.active_producers])
            elif call.tag == "txn_describe":
                self._read_describe_transactions(snap, call)
            elif call.tag == "describe_groups":
                for g in r.groups:
                    group = groups.get(g.group_id)
                    if group is None:
                        continue
                    if g.error_code:
                        group.error = error_name(g.error_code)
                        self._forget_coordinator(GROUP_KEY, g.group_id, g.error_code)
                    else:
                        group.state, group.members = g.group_state, len(g.members)
                        group.protocol_type = g.protocol_type or group.protocol_type
            elif call.tag == "consumer_groups":
                for g in r.groups:
                    group = groups.get(g.group_id)
                    if group is None:
                        continue
                    if g.error_code:
                        group.error = g.error_message or error_name(g.error_code)
                        self._forget_coordinator(GROUP_KEY, g.group_id, g.error_code)
                    else:
                        group.state, group.members = g.group_state, len(g.members)
            elif call.tag == "offsets":
                for g in r.groups:
                    group = groups.get(g.group_id)
                    if group is None:
                        continue
                    if g.error_code:
                        group.error = group.error or f"OffsetFetch: {error_name(g.error_code)}"
                        self._forget_coordinator(GROUP_KEY, g.group_id, g.error_code)
                        continue
                    offsets = committed.setdefault(g.group_id, {})
                    for t in g.topics:
                        for p in t.partitions:
                            offsets[(t.name, p.partition_index)] = (
                                p.committed_offset, error_name(p.error_code) if p.error_code else None)
        # producers of partitions not described this poll: as last seen (dropped once their
        # partition is gone or no longer pinned and a full poll has refreshed them)
        for key, ps in snap.partitions.items():
            seen = self.producers.get(key)
            if seen is not None:
                ps.producers, ps.producers_age_ms = seen[1], now - seen[0]
        for key in list(self.producers):
            if key not in snap.partitions:
                del self.producers[key]

        # round 5: open transactions and who ends them (KIP-664)
        self._open_transactions(snap, described, listed)

        # round 6: lags
        snap.groups = sorted(groups.values(), key=lambda g: g.group_id)
        self._lags(snap, committed)
        snap.transactions.update({tid: TxnInfo(tid, state, pid) for tid, (state, pid) in self.all_transactions.items()
                                  if tid not in snap.transactions})
        for tid, info in snap.transactions.items():
            logged = self.txnlog.latest.get(tid)
            if info.source == "ListTransactions" and logged is not None and logged.producer_id == info.producer_id:
                # not described this poll: epoch, timeout and partitions from its last record
                snap.transactions[tid] = TxnInfo(tid, info.state or logged.state, info.producer_id,
                                                 logged.producer_epoch, logged.timeout_ms, logged.start_ms,
                                                 logged.partitions if logged.is_open else [],
                                                 source="__transaction_state")

    # ------------------------------------------------------------------ coordinators
    def _find_coordinators(self, snap: Snapshot, key_type: int, keys: list[str]) -> None:
        unknown = [k for k in keys if (key_type, k) not in self.coordinators]
        if not unknown:
            return
        try:
            r = self.cluster.request(None, FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": unknown})
        except ClusterError as e:
            snap.errors.append(f"FindCoordinator: {e}")
            return
        for c in r.coordinators:
            if c.error_code:
                snap.errors.append(f"FindCoordinator {c.key!r}: {error_name(c.error_code)}")
            elif c.node_id in self.cluster.nodes:
                self.coordinators[(key_type, c.key)] = c.node_id

    def _by_coordinator(self, key_type: int, keys: list[str]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for k in keys:
            node = self.coordinators.get((key_type, k))
            if node is not None:
                out.setdefault(node, []).append(k)
        return out

    def _forget_coordinator(self, key_type: int, key: str, code: int) -> None:
        if code in COORDINATOR_ERRORS:
            self.coordinators.pop((key_type, key), None)

    def _describe_transactions_calls(self, ids: list[str]) -> list[Call]:
        return [Call(node, DESCRIBE_TRANSACTIONS, {"transactional_ids": tids}, tag="txn_describe")
                for node, tids in self._by_coordinator(TXN_KEY, ids).items()]

    def _read_describe_transactions(self, snap: Snapshot, call: Call) -> None:
        for s in call.response.transaction_states:
            if s.error_code:
                self._forget_coordinator(TXN_KEY, s.transactional_id, s.error_code)
                if s.error_code != ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    snap.errors.append(f"DescribeTransactions {s.transactional_id!r}: {error_name(s.error_code)}")
                continue
            snap.transactions[s.transactional_id] = TxnInfo(
                s.transactional_id, s.transaction_state, s.producer_id, s.producer_epoch, s.transaction_timeout_ms,
                s.transaction_start_time_ms, sorted((t.topic, p) for t in s.topics for p in t.partitions),
                coordinator=call.node, source="DescribeTransactions")

    # ------------------------------------------------------------------ open transactions
    def _open_transactions(self, snap: Snapshot, described: set, listed: dict[str, tuple[str, int]]) -> None:
        found: list[OpenTxn] = []
        for key in sorted(described):
            ps = snap.partitions[key]
            if not ps.pinned:
                continue
            for pr in ps.producers or []:
                if pr.txn_start_offset >= 0:
                    found.append(OpenTxn(ps.topic, ps.partition, pr.producer_id, pr.producer_epoch,
                                         pr.coordinator_epoch, pr.txn_start_offset, pr.last_timestamp,
                                         ps.hwm, ps.lso))
        by_pid = {info.producer_id: info for info in snap.transactions.values() if info.is_open}
        # producers no open transaction names: which ids are they? (KIP-664: ListTransactions
        # filtered by producer id, then DescribeTransactions)
        unknown = sorted({t.producer_id for t in found if t.producer_id not in by_pid})
        if unknown:
            calls = [Call(node, LIST_TRANSACTIONS, {"state_filters": [], "producer_id_filters": unknown,
                                                    "duration_filter": -1}) for node in sorted(snap.brokers)]
            ids = set()
            for call in self.cluster.pipeline(calls):
                if call.error is None:
                    for s in call.response.transaction_states:
                        ids.add(s.transactional_id)
                        listed.setdefault(s.transactional_id, (s.transaction_state, s.producer_id))
            ids = sorted(ids)
            self._find_coordinators(snap, TXN_KEY, ids)
            for call in self.cluster.pipeline(self._describe_transactions_calls(ids)):
                if call.error is None:
                    self._read_describe_transactions(snap, call)
                else:
                    snap.errors.append(f"DescribeTransactions: {call.error}")
        by_pid_any = {info.producer_id: info for info in snap.transactions.values()}
        suspects = set()
        for t in found:
            info = by_pid_any.get(t.producer_id)
            if info is None:
                info = next((TxnInfo(tid, state, pid) for tid, (state, pid) in listed.items()
                             if pid == t.producer_id), None)
            t.txn = info
            t.transactional_id = info.transactional_id if info else None
            if info is None:
                t.reason = "no transactional id has this producer id: no coordinator will end it"
            elif not info.is_open:
                t.reason = f"its coordinator has no transaction open (state {info.state})"
            elif (t.topic, t.partition) not in info.partitions:
                t.reason = "its coordinator's open transaction does not include this partition"
            else:
                t.reason = ""
                continue
            # seen on two polls running: a transaction completing between the DescribeProducers
            # and the DescribeTransactions of one poll is not called hanging
            suspects.add(t.key)
            t.hanging = t.key in self.suspects
            if not t.hanging:
                t.reason += " (checking again)"
        self.suspects = suspects
        snap.open_txns = sorted(found, key=lambda t: (not t.hanging, not t.pins, t.topic, t.partition,
                                                      t.start_offset))

    # ------------------------------------------------------------------ lags
    def _lags(self, snap: Snapshot, committed: dict) -> None:
        wanted: dict[tuple[str, int, int], tuple[int, int]] = {}
        for g in snap.groups:
            for key, (offset, error) in sorted(committed.get(g.group_id, {}).items()):
                ps = snap.partitions.get(key)
                gp = GroupPartition(key[0], key[1], offset, ps.hwm if ps else None, ps.lso if ps else None,
                                    None, None, error=error)
                g.partitions.append(gp)
                if error or offset < 0 or ps is None or ps.hwm is None or ps.lso is None:
                    continue
                gp.lag = max(0, ps.hwm - offset)
                if offset >= ps.lso:
                    gp.committed_lag = 0
                else:
                    wanted[(key[0], key[1], offset)] = (ps.leader, ps.lso)
        if not wanted:
            self.lag.scans.clear()
            return
        lags = self.lag.run(self.cluster, wanted)
        for g in snap.groups:
            for gp in g.partitions:
                lag = lags.get((gp.topic, gp.partition, gp.committed))
                if lag is not None:
                    gp.committed_lag, gp.committed_lag_exact = lag.count, lag.exact
                    gp.error = gp.error or lag.error
