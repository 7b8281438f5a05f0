#!/usr/bin/env python3
"""A tiny name server for one experiment: answers every A query with 127.0.0.1 and every AAAA
query with an empty NOERROR answer, except while the file STALL exists, when it answers nothing.
Logs each query with its time."""
import os, socket, struct, sys, time
addr, stall = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
t0 = time.time()
while True:
    data, peer = s.recvfrom(512)
    qid, flags, qd = struct.unpack("!HHH", data[:6])
    i = 12
    labels = []
    while data[i]:
        labels.append(data[i+1:i+1+data[i]].decode()); i += 1 + data[i]
    qtype = struct.unpack("!H", data[i+1:i+3])[0]
    question = data[12:i+5]
    stalled = os.path.exists(stall)
    print(f"{time.time()-t0:8.3f} {'.'.join(labels)} {'A' if qtype==1 else 'AAAA' if qtype==28 else qtype} {'DROPPED' if stalled else 'answered'}", flush=True)
    if stalled:
        continue
    answers = b""
    if qtype == 1:
        answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 30, 4) + socket.inet_aton("127.0.0.1")
    header = struct.pack("!HHHHHH", qid, 0x8180, 1, 1 if answers else 0, 0, 0)
    s.sendto(header + question + answers, peer)
