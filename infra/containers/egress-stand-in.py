"""A stand-in for Cloudflare's networking sidecar (the image cloudflare/proxy-everything), which
`wrangler dev` starts beside every Container and which cannot be pulled on a machine without
Docker Hub. workerd creates it on the bridge network with NET_ADMIN, its port 39001 published on
the host, started with --http-egress-port P --http-ingress-address 0.0.0.0:39001
--docker-gateway-cidr CIDR --dns-enabled --tls-intercept --disable-ipv6, and the app container
joins its network namespace. This stand-in does what workerd then asks of it, and no more:

- ingress, on --http-ingress-address: an HTTP CONNECT whose X-Dst-Addr names 127.0.0.1:PORT is
  a TCP connection to the app container, which shares this container's network namespace (400
  when nothing listens there); PUT /egress carries workerd's egress settings (its listener's
  port, the hostnames the Worker intercepts, whether the container may reach the internet); GET
  /ca answers the certificate workerd would put into the container for HTTPS interception (empty
  here: this stand-in intercepts no TLS).
- egress: every TCP connection the app container opens to an address outside loopback and the
  container network is redirected here (iptables, with the NET_ADMIN capability workerd grants)
  and handed to workerd's egress listener as a CONNECT to its original address, with the HTTP
  Host it carries as X-Hostname, so the Worker's outbound interception and its "internet enabled"
  switch decide what happens, as on Cloudflare. The hostnames the Worker intercepts resolve to
  11.0.0.1 through /etc/hosts, which the app container shares, instead of DNS interception.

Not done: TLS interception (HTTPS egress mappings), DNS interception (names the Worker does not
intercept resolve with the container's resolver, whatever "internet enabled" says), UDP, IPv6.
"""

import asyncio
import ipaddress
import json
import re
import signal
import socket
import subprocess
import sys

EGRESS_REDIRECT_PORT = 39000
# The mark on this process's own connections, which the redirect rule lets through.
OWN_MARK = 100
SO_ORIGINAL_DST = 80
# Where intercepted hostnames point: an address outside the container network, so redirected.
INTERCEPTED_ADDRESS = "11.0.0.1"
HOSTS_FILE = "/etc/hosts"
# How long to wait for a client's first bytes (its HTTP request line and Host) before tunnelling.
PEEK_SECONDS = 0.5

settings = {"egress_port": 0, "gateway": ""}


def option(argv, name, default):
    return argv[argv.index(name) + 1] if name in argv else default


async def read_head(reader):
    """An HTTP request's line and headers (names lower-cased)."""
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if value:
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


async def respond(writer, status, body=b""):
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    writer.close()


async def pump(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        pass


async def splice(a, b):
    """Relays two connections (reader, writer pairs) both ways until both sides end."""
    await asyncio.gather(pump(a[0], b[1]), pump(b[0], a[1]))
    a[1].close()
    b[1].close()


async def connect_to_app(reader, writer, target, headers):
    host, _, port = headers.get("x-dst-addr", target).rpartition(":")
    try:
        app = await asyncio.open_connection(host, int(port))
    except OSError as error:
        return await respond(writer, "400 Bad Request", str(error).encode())
    writer.write(b"HTTP/1.1 200 OK\r\n\r\n")
    await writer.drain()
    await splice((reader, writer), app)


def intercept_hostnames(names):
    """Points the hostnames the Worker intercepts (exact names; globs cannot be) at the redirect,
    in place of the previous ones (the container engine adds lines of its own to the file)."""
    with open(HOSTS_FILE) as hosts:
        kept = [line for line in hosts if not line.startswith(INTERCEPTED_ADDRESS + " ")]
    kept += [f"{INTERCEPTED_ADDRESS} {name}\n" for name in names if "*" not in name]
    with open(HOSTS_FILE, "w") as hosts:
        hosts.writelines(kept)


async def update_egress(reader, writer, headers):
    update = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
    settings["egress_port"] = update.get("port", settings["egress_port"])
    if "dns" in update:
        intercept_hostnames(update["dns"].get("allowHostnames", []))
    print("egress settings", update, flush=True)
    await respond(writer, "204 No Content")


async def handle_ingress(reader, writer):
    method, target, headers = await read_head(reader)
    if method == "CONNECT":
        await connect_to_app(reader, writer, target, headers)
    elif method == "PUT" and target == "/egress":
        await update_egress(reader, writer, headers)
    elif method == "GET" and target == "/ca":
        await respond(writer, "200 OK")
    else:
        await respond(writer, "404 Not Found")


def original_destination(writer):
    raw = writer.get_extra_info("socket").getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    return f"{socket.inet_ntoa(raw[4:8])}:{int.from_bytes(raw[2:4], 'big')}"


def http_hostname(first_bytes):
    """The Host of a plain HTTP request, as proxy-everything reports it (X-Hostname)."""
    if not re.match(rb"[A-Z]+ \S+ HTTP/1\.[01]\r\n", first_bytes):
        return None
    found = re.search(rb"\r\nhost:[ \t]*([^\r\n:]+)", first_bytes, re.IGNORECASE)
    return found.group(1).decode("latin-1") if found else None


async def open_gateway():
    """A connection to workerd's egress listener, marked so it is not redirected back here."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, OWN_MARK)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (settings["gateway"], settings["egress_port"]))
    return await asyncio.open_connection(sock=sock)


async def handle_egress(reader, writer):
    destination = original_destination(writer)
    try:
        first = await asyncio.wait_for(reader.read(65536), PEEK_SECONDS)
    except asyncio.TimeoutError:
        first = b""
    hostname = http_hostname(first)
    gateway = await open_gateway()
    hint = f"X-Hostname: {hostname}\r\n" if hostname else ""
    gateway[1].write(f"CONNECT {destination} HTTP/1.1\r\nHost: {destination}\r\n{hint}X-Proto: tcp\r\n\r\n".encode())
    status = (await gateway[0].readuntil(b"\r\n\r\n")).split(b" ", 2)[1]
    # 200: workerd serves the HTTP inside the tunnel (an intercepted host); 202: it passes the
    # bytes on to the internet when the container may reach it. Anything else: refused.
    if not status.startswith(b"2"):
        writer.close()
        gateway[1].close()
        return
    gateway[1].write(first)
    await splice((reader, writer), gateway)


def install_redirect(network):
    """Redirects the app container's TCP to anything but loopback and the container network."""
    chain = ["-A", "EGRESS_STAND_IN"]
    rules = [["-N", "EGRESS_STAND_IN"],
             [*chain, "-d", "127.0.0.0/8", "-j", "RETURN"],
             [*chain, "-d", network, "-j", "RETURN"],
             [*chain, "-m", "mark", "--mark", str(OWN_MARK), "-j", "RETURN"],
             [*chain, "-p", "tcp", "-j", "REDIRECT", "--to-ports", str(EGRESS_REDIRECT_PORT)],
             ["-A", "OUTPUT", "-p", "tcp", "-j", "EGRESS_STAND_IN"]]
    for rule in rules:
        subprocess.run(["iptables", "-t", "nat", *rule], check=True)


def gateway_address(network):
    """The host as the container reaches it: host.docker.internal's address when the engine wrote
    one (podman 4 writes the word "host-gateway"), else the container network's first address."""
    with open(HOSTS_FILE) as hosts:
        for fields in (line.split() for line in hosts):
            if "host.docker.internal" in fields[1:] and is_address(fields[0]):
                return fields[0]
    return str(next(ipaddress.ip_network(network, strict=False).hosts()))


def is_address(text):
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


async def main(argv):
    host, _, port = option(argv, "--http-ingress-address", "0.0.0.0:39001").rpartition(":")
    network = option(argv, "--docker-gateway-cidr", "172.17.0.0/16")
    settings["egress_port"] = int(option(argv, "--http-egress-port", "0"))
    settings["gateway"] = gateway_address(network)
    try:
        install_redirect(network)
    except (OSError, subprocess.CalledProcessError) as error:
        # Without NET_ADMIN (a rootless engine) ingress still works; egress then bypasses workerd.
        print(f"egress stand-in: no egress redirect ({error})", flush=True)
    ingress = await asyncio.start_server(handle_ingress, host, int(port))
    egress = await asyncio.start_server(handle_egress, "127.0.0.1", EGRESS_REDIRECT_PORT)
    print(f"egress stand-in: ingress on {host}:{port}, egress to {settings['gateway']}", flush=True)
    await asyncio.gather(ingress.serve_forever(), egress.serve_forever())


# As a container's first process, it must end on SIGTERM itself (the kernel ignores it otherwise).
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
asyncio.run(main(sys.argv[1:]))
