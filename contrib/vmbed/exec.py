#!/usr/bin/env python3
"""vmbed-exec: run a command in the other guest of a contrib/vmbed.sh run.

  vmbed-exec HOST CMD [ARGS...]

like 'ssh HOST CMD...' (Open MPI's launcher agent: plm_rsh_agent): the
words are joined with spaces and run by /bin/sh -c in guest HOST (vm0,
vm1 or its address) as root, in /, stdin /dev/null; its stdout and stderr
come back on ours, its status is ours (255 when it could not be started).
When this process ends first (killed, or the caller closed the
connection), the command's process group is killed in the other guest.

  exec.py serve     (started by the guest at boot, two guests only)

listens on the guest's address, port 7699, and serves only the other
guest's address: a request is one JSON line {"argv": [...]}, the answer
frames of a kind byte ('o' stdout, 'e' stderr, 'x' exit status), a 4-byte
big-endian length and the data.
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys

PORT = 7699
MAX_REQ = 1 << 20


def frame(kind, data):
    return kind + struct.pack(">I", len(data)) + data


def serve_one(conn):
    """Run one request of conn (in a child process of the server)."""
    buf = b""
    while b"\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk or len(buf) > MAX_REQ:
            return
        buf += chunk
    try:
        argv = json.loads(buf.split(b"\n", 1)[0])["argv"]
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("bad argv")
    except (ValueError, KeyError, TypeError):
        conn.sendall(frame(b"e", b"vmbed-exec: bad request\n") +
                     frame(b"x", b"255"))
        return
    try:
        proc = subprocess.Popen(argv, cwd="/", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        conn.sendall(frame(b"e", ("vmbed-exec: %s\n" % e).encode()) +
                     frame(b"x", b"255"))
        return
    outs = {proc.stdout.fileno(): b"o", proc.stderr.fileno(): b"e"}
    lost = False
    while outs:
        ready, _, _ = select.select(list(outs) + [conn.fileno()], [], [])
        for fd in ready:
            if fd == conn.fileno():
                # the caller sends nothing more: data here means it is gone
                if not conn.recv(4096):
                    lost = True
                continue
            data = os.read(fd, 65536)
            if not data:
                del outs[fd]
                continue
            try:
                conn.sendall(frame(outs[fd], data))
            except OSError:
                lost = True
        if lost:
            break
    if lost:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return
    rc = proc.wait()
    rc = 128 - rc if rc < 0 else rc
    try:
        conn.sendall(frame(b"x", str(rc).encode()))
    except OSError:
        pass


def serve():
    me = os.environ["VMBED_ADDR"]
    peer = os.environ["VMBED_PEER_ADDR"]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # no zombies
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((me, PORT))
    srv.listen(64)
    open("/run/vmbed/exec.ready", "w").close()
    while True:
        conn, addr = srv.accept()
        if addr[0] != peer:
            conn.close()
            continue
        if os.fork() == 0:
            srv.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                serve_one(conn)
            finally:
                os._exit(0)
        conn.close()


def host_addr(host):
    n = int(os.environ.get("VMBED_N", "1"))
    names = {"vm%d" % i: "%s.%d" % (os.environ["VMBED_ADDR"].rsplit(".", 1)[0],
                                    i + 1) for i in range(n)}
    return names.get(host, host)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def client(host, words):
    sock = socket.create_connection((host_addr(host), PORT), timeout=30)
    sock.settimeout(None)
    sock.sendall((json.dumps({"argv": ["/bin/sh", "-c", " ".join(words)]})
                  + "\n").encode())
    while True:
        head = recv_exact(sock, 5)
        if head is None:
            print("vmbed-exec: %s closed the connection" % host,
                  file=sys.stderr)
            return 255
        kind, size = head[:1], struct.unpack(">I", head[1:])[0]
        data = recv_exact(sock, size)
        if data is None:
            return 255
        if kind == b"x":
            return int(data)
        out = sys.stdout if kind == b"o" else sys.stderr
        out.buffer.write(data)
        out.buffer.flush()


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "serve":
        serve()
        return 0
    if len(sys.argv) < 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 255
    try:
        return client(sys.argv[1], sys.argv[2:])
    except OSError as e:
        print("vmbed-exec: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 255


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
