"""A thread blocks in accept() (as torchrun's store does) while the main thread starts two
Python children with subprocess (vfork forced on: this is about gdb's vfork), then needs
the thread's answer."""
import socket
import subprocess
import sys
import threading

subprocess._USE_VFORK = True  # as without mixdbg (which turns it off): this is about gdb's vfork
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(4)
port = server.getsockname()[1]


def serve():
    for _ in range(3):
        conn, _ = server.accept()
        conn.sendall(conn.recv(16).upper())
        conn.close()


threading.Thread(target=serve, daemon=True).start()
code = (f"import socket; s = socket.create_connection(('127.0.0.1', {port})); s.sendall(b'child'); "
        "print('child got', s.recv(16), flush=True)")
children = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True) for _ in range(2)]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"parent")
print("parent got", s.recv(16), [child.wait() for child in children], flush=True)
