package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/internal/netguard"
	"genjobs/internal/testenv"
)

// Every refused range, at its edges, with its neighbours outside it.
var addrCases = []struct {
	addr    string
	allowed bool
}{
	// 0.0.0.0/8 "this network"
	{"0.0.0.0", false}, {"0.255.255.255", false}, {"1.0.0.0", true},
	// 10.0.0.0/8 private
	{"9.255.255.255", true}, {"10.0.0.0", false}, {"10.0.0.1", false}, {"10.255.255.255", false}, {"11.0.0.0", true},
	// 100.64.0.0/10 CGNAT
	{"100.63.255.255", true}, {"100.64.0.0", false}, {"100.127.255.255", false}, {"100.128.0.0", true},
	// 127.0.0.0/8 loopback
	{"126.255.255.255", true}, {"127.0.0.1", false}, {"127.255.255.254", false}, {"128.0.0.0", true},
	// 169.254.0.0/16 link-local, cloud metadata
	{"169.253.255.255", true}, {"169.254.0.1", false}, {"169.254.169.254", false}, {"169.255.0.0", true},
	// 172.16.0.0/12 private
	{"172.15.255.255", true}, {"172.16.0.0", false}, {"172.31.255.255", false}, {"172.32.0.0", true},
	// 192.0.0.0/24 IETF protocol assignments, 192.0.2.0/24 documentation
	{"191.255.255.255", true}, {"192.0.0.0", false}, {"192.0.0.255", false}, {"192.0.1.0", true},
	{"192.0.2.1", false}, {"192.0.3.0", true},
	// 192.88.99.0/24 6to4 relay anycast
	{"192.88.98.255", true}, {"192.88.99.1", false}, {"192.88.100.0", true},
	// 192.168.0.0/16 private
	{"192.167.255.255", true}, {"192.168.0.1", false}, {"192.168.255.255", false}, {"192.169.0.0", true},
	// 198.18.0.0/15 benchmarking
	{"198.17.255.255", true}, {"198.18.0.0", false}, {"198.19.255.255", false}, {"198.20.0.0", true},
	// documentation
	{"198.51.100.7", false}, {"203.0.113.9", false}, {"203.0.114.0", true},
	// 224.0.0.0/4 multicast, 240.0.0.0/4 reserved and broadcast
	{"223.255.255.255", true}, {"224.0.0.1", false}, {"239.255.255.250", false},
	{"240.0.0.1", false}, {"255.255.255.255", false},
	// public IPv4
	{"8.8.8.8", true}, {"52.95.110.1", true}, {"93.184.215.14", true},

	// ::/96 unspecified, loopback, IPv4-compatible
	{"::", false}, {"::1", false}, {"::127.0.0.1", false}, {"::8.8.8.8", false},
	// IPv4-mapped: judged by the IPv4 address
	{"::ffff:127.0.0.1", false}, {"::ffff:10.0.0.5", false}, {"::ffff:169.254.169.254", false},
	{"::ffff:0.0.0.0", false}, {"::ffff:8.8.8.8", true},
	// NAT64 64:ff9b::/96: judged by the IPv4 address; local-use 64:ff9b:1::/48 refused
	{"64:ff9b::127.0.0.1", false}, {"64:ff9b::a00:1", false}, {"64:ff9b::169.254.169.254", false},
	{"64:ff9b::808:808", true}, {"64:ff9b:1::808:808", false},
	// discard-only, Teredo, documentation
	{"100::1", false}, {"2001::1", false}, {"2001:db8::1", false}, {"3fff::1", false},
	// 6to4 2002::/16: judged by the IPv4 address in bits 16..47
	{"2002:7f00:1::1", false}, {"2002:a9fe:a9fe::1", false}, {"2002:c0a8:101::1", false}, {"2002:808:808::1", true},
	// fc00::/7 unique local, AWS's IPv6 metadata service
	{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"fc00::1", false}, {"fd00:ec2::254", false},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
	// fe80::/10 link-local, fec0::/10 site-local
	{"fe80::1", false}, {"fe80::1%eth0", false}, {"febf:ffff::1", false}, {"fec0::1", false},
	// ff00::/8 multicast
	{"ff02::1", false}, {"ff05::1:3", false},
	// public IPv6
	{"2606:4700:4700::1111", true}, {"2a00:1450:4001:81c::200e", true},
}

// An HTTP proxy from the environment would connect on the request's behalf,
// so only the proxy's own address would be checked. This test comes first in
// the file: net/http reads the proxy variables once per process.
func TestTransportIgnoresEnvironmentProxy(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "metadata")
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	g := netguard.Guard{Exempt: []netip.AddrPort{netip.MustParseAddrPort(proxy.Listener.Addr().String())},
		Connect: testenv.LoopbackOnly(t).Connect}
	client := &http.Client{Transport: g.Transport()}
	resp, err := client.Get("http://169.254.169.254/latest/meta-data/")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("GET through an environment proxy: %v, want ErrBlocked", err)
	}
	if proxied.Load() != 0 {
		t.Error("the request went through the environment's proxy")
	}
	if g.Transport().Proxy != nil {
		t.Error("the transport has a Proxy function")
	}
}

func TestAllowed(t *testing.T) {
	var strict netguard.Guard
	open := netguard.Guard{AllowPrivate: true}
	for _, c := range addrCases {
		ip := netip.MustParseAddr(c.addr)
		if got := strict.Allowed(ip); got != c.allowed {
			t.Errorf("Allowed(%s) = %v, want %v", c.addr, got, c.allowed)
		}
		if !open.Allowed(ip) {
			t.Errorf("with AllowPrivate, Allowed(%s) = false, want true", c.addr)
		}
	}
	if strict.Allowed(netip.Addr{}) || open.Allowed(netip.Addr{}) {
		t.Error("the zero netip.Addr is allowed")
	}
}

// listen starts a TCP listener on addr ("127.0.0.1:0", "[::1]:0") and returns
// it with a function reporting whether anyone has connected to it (a
// connection completes into the listen queue before the dial returns).
func listen(t *testing.T, addr string) (net.Listener, func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, func() bool {
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			return true
		}
		return false
	}
}

// port returns ":port" of ln.
func port(ln net.Listener) string {
	return fmt.Sprintf(":%d", ln.Addr().(*net.TCPAddr).Port)
}

func TestDialerRefusesBeforeConnecting(t *testing.T) {
	ln4, connected4 := listen(t, "127.0.0.1:0")
	ln6, connected6 := listen(t, "[::1]:0")
	g := netguard.Guard{Connect: testenv.LoopbackOnly(t).Connect}
	d := g.Dialer(2 * time.Second)
	for _, c := range []struct{ addr, refused string }{
		{"127.0.0.1" + port(ln4), "127.0.0.1"},
		{"localhost" + port(ln4), "127.0.0.1"},
		{"[::ffff:127.0.0.1]" + port(ln4), "127.0.0.1"},
		{"[::1]" + port(ln6), "::1"},
		{"169.254.169.254:80", "169.254.169.254"},
		{"10.0.0.1:80", "10.0.0.1"},
		{"[fd00:ec2::254]:80", "fd00:ec2::254"},
	} {
		conn, err := d.DialContext(context.Background(), "tcp", c.addr)
		if err == nil {
			conn.Close()
			t.Errorf("dial %s: connected, want refused", c.addr)
			continue
		}
		var be *netguard.BlockedError
		if !errors.Is(err, netguard.ErrBlocked) || !errors.As(err, &be) {
			t.Errorf("dial %s: %v, want an error wrapping ErrBlocked", c.addr, err)
			continue
		}
		if be.Addr.String() != c.refused {
			t.Errorf("dial %s: refused address %s, want %s", c.addr, be.Addr, c.refused)
		}
		if want := "the address " + c.refused + " is not allowed"; be.Error() != want {
			t.Errorf("dial %s: %q, want %q", c.addr, be.Error(), want)
		}
	}
	if connected4() || connected6() {
		t.Error("a refused dial reached the listener")
	}
}

func TestDialerAllowPrivate(t *testing.T) {
	ln4, connected4 := listen(t, "127.0.0.1:0")
	ln6, connected6 := listen(t, "[::1]:0")
	g := netguard.Guard{AllowPrivate: true}
	d := g.Dialer(2 * time.Second)
	for _, addr := range []string{"127.0.0.1" + port(ln4), "localhost" + port(ln4), "[::ffff:127.0.0.1]" + port(ln4), "[::1]" + port(ln6)} {
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Errorf("dial %s with AllowPrivate: %v", addr, err)
			continue
		}
		conn.Close()
	}
	if !connected4() || !connected6() {
		t.Error("the listeners saw no connection")
	}
	// Addresses no test can connect to: the guard lets them through to the
	// operating system.
	for _, addr := range []string{"169.254.169.254:80", "10.0.0.1:80", "[fe80::1%eth0]:80"} {
		if err := d.Control("tcp", addr, nil); err != nil {
			t.Errorf("Control(%s) with AllowPrivate: %v", addr, err)
		}
	}
}

func TestExemptIsOneAddressAndPort(t *testing.T) {
	ln, _ := listen(t, "127.0.0.1:0")
	other, otherConnected := listen(t, "127.0.0.1:0")
	g := netguard.Guard{Exempt: []netip.AddrPort{ln.Addr().(*net.TCPAddr).AddrPort()}, Connect: testenv.LoopbackOnly(t).Connect}
	d := g.Dialer(2 * time.Second)
	conn, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial the exempt address: %v", err)
	}
	conn.Close()
	if _, err := d.DialContext(context.Background(), "tcp", other.Addr().String()); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("dial another port of the exempt address: %v, want ErrBlocked", err)
	}
	if otherConnected() {
		t.Error("the other port saw a connection")
	}
}

func TestTransportRefusesThroughHTTPClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret")
	}))
	defer srv.Close()
	g := netguard.Guard{Connect: testenv.LoopbackOnly(t).Connect}
	client := &http.Client{Transport: g.Transport()}
	for _, u := range []string{srv.URL, "http://169.254.169.254/latest/meta-data/", "http://[::1]:1/", "http://[::ffff:127.0.0.1]:1/"} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s: answered %s, want refused", u, resp.Status)
			continue
		}
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("GET %s: %v, want an error wrapping ErrBlocked", u, err)
		}
	}
}

func TestTransportBoundsResponseHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Padding", strings.Repeat("a", 1<<20))
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	g := netguard.Guard{Exempt: []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}}
	client := &http.Client{Transport: g.Transport()}
	resp, err := client.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a 1 MiB response header was accepted")
	}
}

// Hosts a browser reads as IPv4 numbers (2130706433, 127.1, 0x7f.1) are
// those addresses: judged as such, never sent to DNS. Hosts that end in a
// number but are no address are refused.
func TestNumericHostsAreTheirAddresses(t *testing.T) {
	ln, connected := listen(t, "127.0.0.1:0")
	p := port(ln)
	numeric := []string{"2130706433", "127.1", "127.0.1", "0x7f.1", "0x7f000001", "017700000001", "127.0.0.1."}
	strict := netguard.Guard{Connect: testenv.LoopbackOnly(t).Connect}
	client := &http.Client{Transport: strict.Transport()}
	for _, h := range append(numeric, "1.2.3.4.5", "256.1", "127.0.0.0x") {
		resp, err := client.Get("http://" + h + p + "/")
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET http://%s%s/: answered, want refused", h, p)
			continue
		}
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("GET http://%s%s/: %v, want ErrBlocked", h, p, err)
		}
	}
	if connected() {
		t.Error("a refused host reached the listener")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	p = port(srv.Listener)
	trap := testenv.LoopbackOnly(t)
	open := netguard.Guard{AllowPrivate: true, Connect: trap.Connect}
	client = &http.Client{Transport: open.Transport()}
	for _, h := range numeric {
		resp, err := client.Get("http://" + h + p + "/")
		if err != nil {
			t.Errorf("GET http://%s%s/ with AllowPrivate: %v", h, p, err)
			continue
		}
		resp.Body.Close()
	}
	for _, a := range trap.Seen() {
		if a != "tcp4 127.0.0.1"+p {
			t.Errorf("a numeric host connected to %s, want 127.0.0.1%s", a, p)
		}
	}
}
