"""Tries to reach the network: TCP and UDP to 127.0.0.1 and to public addresses, IPv6, a raw
netlink socket, DNS, and named AF_UNIX sockets (stream and datagram) on the host's filesystem.
Addresses are numeric and built without getaddrinfo (whose idna codec a worker may lack).

threat: network connect (TCP to 127.0.0.1 and external, UDP, DNS, host unix sockets)
expected: every attempt fails (seccomp denies non-AF_UNIX sockets, Landlock denies TCP, the
  network namespace has no route); nothing reaches the listeners the test opened
safety: sends the 6 bytes "hostil" at most once per target; connect timeouts of 0.5 s
"""
import json
import socket

DEFAULT_TARGETS = {
    "tcp_local": ["127.0.0.1", 9],
    "udp_local": ["127.0.0.1", 9],
    "tcp_external": ["1.1.1.1", 80],
    "udp_external": ["8.8.8.8", 53],
    "tcp6_local": ["::1", 9],
}


def _attempt(fn):
    try:
        return "reached: " + str(fn())
    except BaseException as exc:  # noqa: BLE001
        return "blocked: " + repr(exc)


class NetworkEnv:
    def __init__(self, max_turns=25, targets=None, unix_paths=(), dns=True):
        self.max_turns = max_turns
        self.targets = dict(DEFAULT_TARGETS if targets is None else targets)
        self.unix_paths = list(unix_paths)
        self.dns = dns

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def _tcp(self, host, port):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            s.connect((host, port))
            s.sendall(b"hostil")
            return "sent"

    def _udp(self, host, port):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            return s.sendto(b"hostil", (host, port))

    def _unix(self, path, kind):
        with socket.socket(socket.AF_UNIX, kind) as s:
            s.settimeout(0.5)
            s.connect(path)
            s.send(b"hostil")
            return "sent"

    def _netlink(self):
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as s:
            return "opened %d" % s.fileno()

    def step(self, action):
        report = {}
        for name, (host, port) in self.targets.items():
            fn = self._udp if name.startswith("udp") else self._tcp
            report[name] = _attempt(lambda: fn(host, port))
        if self.dns:
            report["dns"] = _attempt(lambda: socket.getaddrinfo(b"example.com", 80))
            report["netlink"] = _attempt(self._netlink)
        for i, path in enumerate(self.unix_paths):
            kind = socket.SOCK_DGRAM if path.endswith(".dgram") else socket.SOCK_STREAM
            report["unix_%d" % i] = _attempt(lambda: self._unix(path, kind))
        return json.dumps(report), 0.0, True, False, {}
