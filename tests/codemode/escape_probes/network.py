# The network: the test's loopback TCP listener on another port, another gateway (with its token),
# an abstract unix socket the test listens on, DNS, UDP (a listener that answers, and port 53),
# listening (an unbound socket binds itself), and raw / packet / netlink sockets.  With a gateway the
# script's own gateway must stay reachable (the CONTROL line), so "blocked" is the policy, not a dead network.
import socket

ANSWER_WAIT = 1.0


def tcp(host, port):
    with socket.create_connection((host, port), timeout=ANSWER_WAIT) as conn:
        conn.settimeout(ANSWER_WAIT)
        return conn.recv(100)


def http_get(url):
    import urllib.request

    with urllib.request.urlopen(url, timeout=ANSWER_WAIT * 3) as response:
        return response.status, response.read(200)


def abstract_unix():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(ANSWER_WAIT)
        conn.connect("\0" + CONFIG["abstract"])
        return conn.recv(100)


def udp(host, port, payload):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(ANSWER_WAIT)
        sock.sendto(payload, (host, port))
        try:
            return sock.recvfrom(512)
        except socket.timeout:
            raise Blocked("sent, but no answer came back")


DNS_QUERY = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"


def listen_unbound(family):
    # No bind(): listen() picks a free port on every address by itself, and anyone may connect to it.
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.listen(1)
        return sock.getsockname()


def raw(family, kind, proto):
    with socket.socket(family, kind, proto) as sock:
        return sock.family


gateway = os.environ.get("TOOLSCRIPT_GATEWAY_URL")
if gateway:
    try:
        print("CONTROL own gateway " + ("ok" if http_get(gateway + "/runtime/names")[0] == 200 else "no"), flush=True)
    except Exception as exc:
        print("CONTROL own gateway failed: %s: %s" % (type(exc).__name__, exc), flush=True)
attempt("tcp to another loopback port", lambda: tcp("127.0.0.1", CONFIG["tcp_port"]))
attempt("tcp to localhost by name", lambda: tcp("localhost", CONFIG["tcp_port"]))
attempt("call another gateway", lambda: http_get(CONFIG["other_gateway"] + "/runtime/names"))
attempt("abstract unix socket", abstract_unix)
attempt("DNS lookup", lambda: socket.getaddrinfo("example.com", 80))
attempt("UDP to a listener", lambda: udp("127.0.0.1", CONFIG["udp_port"], b"probe"))
attempt("UDP DNS query to 127.0.0.1:53", lambda: udp("127.0.0.1", 53, DNS_QUERY))
attempt("listen on an unbound TCP socket", lambda: listen_unbound(socket.AF_INET))
attempt("listen on an unbound TCP6 socket", lambda: listen_unbound(socket.AF_INET6))
attempt("raw ICMP socket", lambda: raw(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("AF_PACKET socket", lambda: raw(socket.AF_PACKET, socket.SOCK_RAW, 0))
attempt("netlink socket", lambda: raw(socket.AF_NETLINK, socket.SOCK_RAW, 0))
done()
