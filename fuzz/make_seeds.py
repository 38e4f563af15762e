#!/usr/bin/env python3
"""Write fuzz/seeds/<target>/ from the golden files and tiny inline samples.

Run from anywhere: `python3 fuzz/make_seeds.py`. The seeds are committed; libFuzzer's working
corpus goes to fuzz/corpus/<target>/ (git-ignored). Never copies the shared datasets.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden")
SEEDS = os.path.join(HERE, "seeds")
KINDS = ["count_min", "hyper_log_log", "bloom_filter", "dft", "lossy_counting", "sticky_sampling", "ams",
         "gk_quantiles", "lsh", "window_sketch_quantiles", "kll", "cpc", "frequent_items"]


def put(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def envelope_parts(b):
    """(params bytes, payload) of an envelope (layout in src/codec.rs)."""
    p = b[16]
    params = b[17:17 + 8 * p]
    (n,) = struct.unpack_from("<I", b, 17 + 8 * p)
    payload = b[21 + 8 * p:21 + 8 * p + n]
    return p, params, payload


for f in sorted(os.listdir(GOLDEN)):
    kind = next(k for k in sorted(KINDS, key=len, reverse=True) if f.startswith(k + "_v"))
    i = KINDS.index(kind)
    b = open(os.path.join(GOLDEN, f), "rb").read()
    p, params, payload = envelope_parts(b)
    stem = f[:-4]
    put("decode", stem + ".env", b"\xff" + b)                               # whole envelope
    put("decode", stem + ".payload", bytes([i, 0]) + payload)               # golden parameters
    put("decode", stem + ".params", bytes([i, 1, p]) + params + payload)    # parameters in the input

put("requests", "construct_query",
    '[{"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.02]}]\n'
    '{"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["x","price","Queryable","Ad-hoc"]}\n'
    '{not json\n')
put("requests", "count_min",
    '{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","noOfP":4,"requestID":7,"uid":1,'
    '"param":["CountMin","price","NotQueryable",0.0002,0.99,4]}\n'
    '{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":[6.0654,"price","Queryable","Continuous"]}\n')
put("requests", "quantiles",
    '[{"streamID":"","synopsisID":8,"dataSetKey":"Stocks","param":["GK","price","NotQueryable",0.01]},'
    '{"streamID":"","synopsisID":8,"dataSetKey":"Stocks","param":[0.5,"price","Queryable","Ad-hoc"]},'
    '{"streamID":"A","synopsisID":11,"dataSetKey":"S","param":[0.99,"quantile","price","Queryable","Ad-hoc"]}]\n')
put("requests", "frequent",
    '{"streamID":"A","synopsisID":5,"dataSetKey":"S","param":[0.01,"frequentItems","volume","Queryable","Ad-hoc"]}\n'
    '{"streamID":"A","synopsisID":6,"dataSetKey":"S","param":["6","isFrequent","volume","Queryable","Ad-hoc"]}\n'
    '{"streamID":"A","synopsisID":7,"dataSetKey":"S","param":["B","innerProduct","volume","Queryable","Ad-hoc"]}\n'
    '{"streamID":"A","synopsisID":4,"dataSetKey":"S","param":[0.9,"price","Queryable","Ad-hoc"]}\n'
    '{"streamID":"A","synopsisID":3,"dataSetKey":"S","param":["Delete","price","Delete"]}\n')
put("requests", "args", '[0.5,"quantile"]')

put("tuple_jsonl", "flat",
    '{"streamID":"EURTRY","dataSetKey":"Forex","values":{"price":6.0654,"volume":1},"timestamp":"2019-01-02T00:00:01Z"}\n'
    '{"streamID":"A","dataSetKey":"S","values":{"price":"1.5","name":"x"}}\n'
    '{"streamID":"A\\u00e9","dataSetKey":"S","values":{"price":null,"v":[1,2]},"timestamp":1546387201000}\n')
put("tuple_jsonl", "bad", '{"streamID":"A"}\n{not json\n[]\n')

put("tuple_stock", "txt", b"\x00" + "01/02/2019,00:00:01,6.0654,1\n01/02/2019,00:00:02,6.0655,3\n,,\n".encode())
put("tuple_stock", "csv_trade", b"\x01" + b"Date,Time,Price,Volume\n2013-10-07,04:00:00.464,167.41,100,P,20002000,0\n"
    b"2013-10-07,04:00:00.464,abc,100\n")
put("tuple_stock", "csv_quote", b"\x01" + b"Date,Time,Price,Volume,Bid,Ask\n2014-05-01,00:00:00.043,1291.855,1,1291.677,1292.033\n")

put("tuple_ais", "noaa", b"\x00" +
    b"MMSI,BaseDateTime,LAT,LON,SOG,COG,Heading,VesselName,IMO,CallSign,VesselType,Status,Length,Width,Draft,Cargo,TransceiverClass\n"
    b"338148873,2022-01-03T00:00:00,33.60716,-117.91483,0.0,280.0,511,CAZADOR,,,37,,14,,,,B\n"
    b"366748260,2022-01-03T00:00:00,32.08924,-81.05948,0.0,360.0,511,\"JANE, II\",,WCY3322,31,0,19,6,,52,A\n")
put("tuple_ais", "piraeus", b"\x01" + b"t,shipid,lon,lat,heading,course,speed,destination\n"
    b"1554076800000,0ab1,23.63,37.94,511,12.5,0.1,PIRAEUS\n1554076801000,0ab2,23.6,37.9,,,,\n")


# Checkpoint parts, encoded here from the layout table in src/checkpoint/mod.rs (an independent
# writer: the fuzz target's seeds only decode if the two agree). Each part is stored whole and as
# a body without its CRC (the target appends a correct one), plus manifests as JSON.
def s32(b):
    return struct.pack("<I", len(b)) + b


def part_body(id, boundary, process, worker, processes, workers, synopses, sets, sources, tuples):
    b = b"SAMC" + struct.pack("<HQQIIII", 1, id, boundary, process, worker, processes, workers)
    b += struct.pack("<I", len(synopses))
    for syn, role, items, loads, data in synopses:
        b += struct.pack("<IBQI", syn, role, items, loads) + s32(data)
    b += struct.pack("<I", len(sets))
    for query, members in sets:
        b += struct.pack("<II", query, len(members)) + b"".join(s32(m.encode()) for m in members)
    b += struct.pack("<I", len(sources))
    for name, offset, line, max_time, done in sources:
        b += s32(name.encode()) + struct.pack("<QQ", offset, line)
        b += b"\x00" if max_time is None else b"\x01" + struct.pack("<q", max_time)
        b += bytes([done])
    return b + struct.pack("<Q", tuples)


def crc(b):
    import zlib
    return b + struct.pack("<I", zlib.crc32(b))


envelope = open(os.path.join(GOLDEN, "count_min_v1_empty.bin"), "rb").read()
parts = {
    "empty": part_body(1, 0, 0, 0, 1, 1, [], [], [], 0),
    "one_worker": part_body(7, 70000, 0, 1, 1, 2, [(1, 0, 1234, 0, envelope), (2, 1, 5, 2, b"")],
                            [(3, ["EURTRY", "GBPUSD"])],
                            [("unit:1", 4096, 88, 69999, 0), ("generator:2", 17, 0, None, 1)], 1234),
    "kafka": part_body(3, 30000, 1, 3, 2, 4, [(9, 2, 0, 1, b"\x00" * 30)], [(4, []), (5, ["\u00e9"])],
                       [("kafka:ticks:0", 99, 0, -1, 0)], 0),
}
for name, body in parts.items():
    put("checkpoint", name + ".part", crc(body))
    put("checkpoint", name + ".body", body)
put("checkpoint", "manifest.json",
    '{\n  "format": 1,\n  "id": 7,\n  "boundary_ms": 70000,\n  "process": 0,\n  "processes": 2,\n  "workers": 4,\n'
    '  "window_ms": 10000,\n  "created_unix_ms": 1764590000000,\n'
    '  "parts": [{"file": "part-p0-w0.bin", "bytes": 62, "crc32": 4294967295}, {"file": "part-p0-w1.bin", "bytes": 100, "crc32": 0}],\n'
    '  "output": {"path": "out.jsonl", "bytes": 12345},\n  "dead_letters": null,\n'
    '  "script": "[{\\"streamID\\":\\"A\\"}]",\n  "requests": [{"fence_ms": 60000, "text": "{\\"uid\\":3}"}]\n}\n')
put("checkpoint", "manifest_v2.json", '{"format": 2, "id": 1}')
