#!/usr/bin/python3
"""A Python web service under load, for bench-daemon.py: a server process (http.server, one
request at a time, each rendering a page of JSON from Python work: a few dict and string
operations, as a small web application does) and a client in this process making N requests over
one keep-alive connection. Prints the time a request took, on average.

Usage: pyweb.py N"""
import http.client
import http.server
import json
import os
import socket
import sys
import time


def page(path):
    rows = [{'id': i, 'name': 'item %d' % i, 'tags': ['a', 'b', path[-3:]], 'price': i * 1.25} for i in range(60)]
    total = sum(r['price'] for r in rows)
    return json.dumps({'path': path, 'rows': rows, 'total': total}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms delayed ACKs

    def do_GET(self):
        body = page(self.path)
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    n = int(sys.argv[1])
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    port = listener.getsockname()[1]
    listener.close()
    pid = os.fork()
    if pid == 0:
        server = http.server.HTTPServer(('127.0.0.1', port), Handler)
        server.serve_forever()
    for _ in range(200):
        try:
            conn = http.client.HTTPConnection('127.0.0.1', port)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            break
        except OSError:
            time.sleep(0.01)
    t0 = time.monotonic()
    for i in range(n):
        conn.request('GET', '/items/%03d' % (i % 1000))
        r = conn.getresponse()
        r.read()
    took = time.monotonic() - t0
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print('%.1f us a request' % (1e6 * took / n))


if __name__ == '__main__':
    main()
