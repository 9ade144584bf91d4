import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minikafka.testing import BrokerProcess
from adversarial import batches as bad
from rawclient import RawClient
from minikafka.protocol import record_walk as rw, records as rec
t=time.time(); batch = bad.tiny_records_batch(4, 1_000_000); print("build", time.time()-t, len(batch))
h=rec.parse_header(batch)
t=time.process_time(); rw.run(rw.walk_records(batch,0,h.size,h.records_count,4)); print("walk in-process cpu", time.process_time()-t)
b = BrokerProcess("/tmp/tiny/data", name="tiny"); b.start()
try:
    with RawClient("127.0.0.1", b.port, timeout=120) as c:
        c.create_topic("t", configs={"max.message.bytes": str(8 << 20)})
        cpu0 = sum(map(int, open(f"/proc/{b.pid}/stat").read().split()[13:15]))
        t=time.time(); p = c.produce("t", 0, batch)
        cpu1 = sum(map(int, open(f"/proc/{b.pid}/stat").read().split()[13:15]))
        print("answer", p.error_code, "secs", time.time()-t, "broker cpu s", (cpu1-cpu0)/os.sysconf('SC_CLK_TCK'))
finally:
    b.stop()
