#!/usr/bin/env python3
"""vmbed-sync: step the two guests of a contrib/vmbed.sh run together.

  vmbed-sync barrier [NAME] [-t SEC]   wait until the other guest reaches
                                       barrier NAME too
  vmbed-sync xchg VALUE [-t SEC]       print the other guest's VALUE

Both guests call the same sequence of barriers and exchanges; call k of a
guest meets call k of the other on TCP port 7700 + k of the guests' link
(guest 0 listens on its address, guest 1 connects), so that a late or
early guest never meets the wrong call.  Each side sends one line
"KIND NAME VALUE" and reads the other's; a different KIND or NAME means
the guests are out of step (exit 1).  Every wait ends by -t SEC (default
120; exit 124).  With one guest a barrier returns at once and an exchange
is an error.
"""

import argparse
import fcntl
import os
import socket
import sys
import time

BASE_PORT = 7700
SEQ_FILE = "/run/vmbed/sync.seq"
MAX_LINE = 65536


def fail(msg, code=1):
    print("vmbed-sync: " + msg, file=sys.stderr)
    sys.exit(code)


def next_seq():
    """The number of this call in the guest (shared by all its processes)."""
    with open(SEQ_FILE, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read().strip()
        seq = int(text) if text else 0
        f.seek(0)
        f.truncate()
        f.write("%d\n" % (seq + 1))
    return seq


def read_line(conn, deadline):
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        conn.settimeout(left)
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("the other guest closed the connection")
        buf += chunk
        if len(buf) > MAX_LINE:
            raise ConnectionError("the other guest sent a line too long")
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace")


def meet(line, port, deadline):
    """Send line to the other guest, return its line."""
    me = os.environ["VMBED_ADDR"]
    peer = os.environ["VMBED_PEER_ADDR"]
    if os.environ["VMBED_INDEX"] == "0":
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((me, port))
        srv.listen(4)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            srv.settimeout(left)
            conn, addr = srv.accept()
            if addr[0] == peer:
                break
            conn.close()        # not the other guest: not ours to answer
        srv.close()
    else:
        while True:
            conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            conn.settimeout(max(0.1, min(2.0, deadline - time.monotonic())))
            try:
                conn.connect((peer, port))
                break
            except (ConnectionRefusedError, socket.timeout, OSError):
                conn.close()
                if time.monotonic() >= deadline:
                    raise socket.timeout()
                time.sleep(0.05)
    with conn:
        conn.sendall((line + "\n").encode())
        return read_line(conn, deadline)


def main():
    ap = argparse.ArgumentParser(prog="vmbed-sync")
    ap.add_argument("kind", choices=["barrier", "xchg"])
    ap.add_argument("arg", nargs="?", default="")
    ap.add_argument("-t", "--timeout", type=float, default=120.0)
    opt = ap.parse_args()

    name = opt.arg if opt.kind == "barrier" else "-"
    value = opt.arg if opt.kind == "xchg" else "-"
    if opt.kind == "barrier" and not name:
        name = "-"
    for field in (name, value):
        if not field or any(c.isspace() for c in field):
            fail("'%s': names and values are one word" % field, 2)
    if os.environ.get("VMBED_N", "1") != "2":
        if opt.kind == "barrier":
            return 0
        fail("xchg needs two guests", 2)

    seq = next_seq()
    port = BASE_PORT + seq
    if port > 65535:
        fail("too many calls", 2)
    deadline = time.monotonic() + opt.timeout
    try:
        got = meet("%s %s %s" % (opt.kind, name, value), port, deadline)
    except socket.timeout:
        fail("%s %s (call %d): the other guest did not come within %g s"
             % (opt.kind, name, seq, opt.timeout), 124)
    except (ConnectionError, OSError) as e:
        fail("%s %s (call %d): %s" % (opt.kind, name, seq, e))
    fields = got.split(" ")
    if len(fields) != 3 or fields[0] != opt.kind or fields[1] != name:
        fail("out of step: call %d is '%s %s' here, '%s' in the other guest"
             % (seq, opt.kind, name, got))
    if opt.kind == "xchg":
        print(fields[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
