// Package netguard decides which network destinations the service's outbound
// requests may reach: the worker's input fetches and the webhook deliveries.
//
// The check runs at connect time, on the address actually being connected to
// after name resolution (net.Dialer.Control), so a name that resolves to a
// private address, or starts to after a first harmless answer (DNS
// rebinding), is refused too. Refused are loopback, private, link-local
// (169.254.169.254 included), CGNAT, multicast, unspecified, IPv6 ULA and the
// other special-purpose ranges listed in refused, and IPv4 addresses wrapped
// in IPv6 (mapped, NAT64, 6to4) whose IPv4 address is refused.
package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrBlocked marks a destination the guard refused. Refusals are *BlockedError
// values; errors.Is(err, ErrBlocked) works through the *url.Error and
// *net.OpError that wrap them.
var ErrBlocked = errors.New("destination not allowed")

// BlockedError is a refusal of one address.
type BlockedError struct {
	Addr netip.Addr // the refused address; invalid when it could not be parsed
}

func (e *BlockedError) Error() string {
	if !e.Addr.IsValid() {
		return "the address is not allowed"
	}
	return "the address " + e.Addr.String() + " is not allowed"
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// Guard is the network policy. The zero Guard refuses every special-purpose
// destination. It is safe for concurrent use once built.
type Guard struct {
	// AllowPrivate lets every destination through: local development, where
	// webhook receivers and input servers listen on 127.0.0.1.
	AllowPrivate bool

	// Exempt lists exact address:port pairs let through although refused
	// otherwise. For tests only, whose servers listen on 127.0.0.1 while the
	// policy under test stays on; a deployment uses AllowPrivate instead.
	Exempt []netip.AddrPort

	// Connect, when set, is asked about every connection the guard lets
	// through, name lookups' included, just before it is made; an error
	// refuses it. Tests set it (testenv.LoopbackOnly) so that a bug of the
	// policy can never send traffic off the machine.
	Connect func(network, address string) error
}

// Allowed reports whether the guard lets a connection to ip through (Exempt
// aside, which needs a port).
func (g *Guard) Allowed(ip netip.Addr) bool {
	return ip.IsValid() && (g.AllowPrivate || public(ip))
}

// check returns nil when a connection to ap may be made, else a *BlockedError.
func (g *Guard) check(ap netip.AddrPort) error {
	ip := ap.Addr().Unmap().WithZone("")
	if g.Allowed(ip) {
		return nil
	}
	for _, e := range g.Exempt {
		if e.Addr().Unmap() == ip && e.Port() == ap.Port() {
			return nil
		}
	}
	return &BlockedError{Addr: ip}
}

// Dialer returns a dialer that refuses, at connect time, every address the
// guard does not allow. timeout bounds each connection attempt.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	d := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &BlockedError{}
			}
			if err := g.check(ap); err != nil {
				return err
			}
			if g.Connect != nil {
				return g.Connect(network, address)
			}
			return nil
		},
	}
	if g.Connect != nil {
		d.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			if err := g.Connect(network, address); err != nil {
				return nil, err
			}
			var plain net.Dialer
			return plain.DialContext(ctx, network, address)
		}}
	}
	return d
}

// numericHost reads a host the way a browser's URL parser does (the
// WHATWG URL standard's IPv4 parser): a host whose last label is a number
// is an IPv4 address in one to four parts, each decimal, 0x hexadecimal
// or 0 octal, so 2130706433, 127.1 and 0x7f.1 are all 127.0.0.1. ok is
// false for a host that is a name; bad for one that ends in a number but
// is no address. Judging these here means they are never sent to DNS,
// whose answer for them depends on the resolver.
func numericHost(host string) (ip netip.Addr, ok, bad bool) {
	if strings.Contains(host, ":") { // IPv6, judged as it is
		return netip.Addr{}, false, false
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) == 0 || !numericLabel(labels[len(labels)-1]) {
		return netip.Addr{}, false, false
	}
	if len(labels) > 4 {
		return netip.Addr{}, false, true
	}
	parts := make([]uint64, len(labels))
	for i, l := range labels {
		n, err := parseIPv4Part(l)
		if err != nil {
			return netip.Addr{}, false, true
		}
		parts[i] = n
	}
	last := parts[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false, true
	}
	v := last
	for i, n := range parts[:len(parts)-1] {
		if n > 255 {
			return netip.Addr{}, false, true
		}
		v |= n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, false
}

func numericLabel(l string) bool {
	if _, err := parseIPv4Part(l); err == nil {
		return true
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}

func parseIPv4Part(l string) (uint64, error) {
	base := 10
	switch {
	case len(l) >= 2 && (l[:2] == "0x" || l[:2] == "0X"):
		l, base = l[2:], 16
		if l == "" {
			return 0, nil
		}
	case len(l) >= 2 && l[0] == '0':
		l, base = l[1:], 8
	}
	return strconv.ParseUint(l, base, 32)
}

// Transport returns an HTTP transport whose every connection goes through
// Dialer. It never uses a proxy (an environment proxy would connect on the
// request's behalf and so bypass the check), and bounds the time to connect,
// to finish the TLS handshake and to receive the response headers, and the
// size of those headers. Callers bound the whole request with a context.
func (g *Guard) Transport() *http.Transport {
	d := g.Dialer(10 * time.Second)
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			if host, port, err := net.SplitHostPort(address); err == nil {
				switch ip, ok, bad := numericHost(host); {
				case bad:
					return nil, &net.OpError{Op: "dial", Net: network, Err: &BlockedError{}}
				case ok:
					address = net.JoinHostPort(ip.String(), port)
				}
			}
			// An address literal is judged before any socket is made, so that
			// it is refused the same way where its address family is missing.
			if ap, err := netip.ParseAddrPort(address); err == nil {
				if err := g.check(ap); err != nil {
					return nil, &net.OpError{Op: "dial", Net: network, Err: err}
				}
			}
			return d.DialContext(ctx, network, address)
		},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  20 * time.Second,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           100,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// refused lists the special-purpose ranges (IANA's registries, RFC 6890 and
// successors) no outbound request may reach. IPv4 addresses wrapped in IPv6
// are handled by public, which unwraps them first.
//
// It is built on first use, not at init: a package-level table is linked
// into, and parsed by, every function that imports the package, guard or no.
func refused() []netip.Prefix {
	ranges.once.Do(func() { ranges.refused = refusedRanges() })
	return ranges.refused
}

var ranges struct {
	once    sync.Once
	refused []netip.Prefix
}

func refusedRanges() []netip.Prefix {
	return []netip.Prefix{
		// IPv4
		netip.MustParsePrefix("0.0.0.0/8"),       // "this network"; 0.0.0.0 reaches the local host
		netip.MustParsePrefix("10.0.0.0/8"),      // private (RFC 1918)
		netip.MustParsePrefix("100.64.0.0/10"),   // shared address space, CGNAT (RFC 6598)
		netip.MustParsePrefix("127.0.0.0/8"),     // loopback
		netip.MustParsePrefix("169.254.0.0/16"),  // link-local; cloud metadata at 169.254.169.254
		netip.MustParsePrefix("172.16.0.0/12"),   // private (RFC 1918)
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (RFC 6890)
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation, TEST-NET-1
		netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast, deprecated (RFC 7526)
		netip.MustParsePrefix("192.168.0.0/16"),  // private (RFC 1918)
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking (RFC 2544)
		netip.MustParsePrefix("198.51.100.0/24"), // documentation, TEST-NET-2
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation, TEST-NET-3
		netip.MustParsePrefix("224.0.0.0/4"),     // multicast
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255 broadcast

		// IPv6
		netip.MustParsePrefix("::/96"),          // unspecified, loopback, deprecated IPv4-compatible
		netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215)
		netip.MustParsePrefix("100::/64"),       // discard-only (RFC 6666)
		netip.MustParsePrefix("2001::/32"),      // Teredo: tunnels to an IPv4 address hidden in it
		netip.MustParsePrefix("2001:db8::/32"),  // documentation
		netip.MustParsePrefix("3fff::/20"),      // documentation (RFC 9637)
		netip.MustParsePrefix("fc00::/7"),       // unique local (ULA); AWS's fd00:ec2::254 metadata
		netip.MustParsePrefix("fe80::/10"),      // link-local
		netip.MustParsePrefix("fec0::/10"),      // site-local, deprecated
		netip.MustParsePrefix("ff00::/8"),       // multicast
	}
}

// The prefixes that carry an IPv4 address in an IPv6 one: the well-known
// NAT64 prefix (RFC 6052), 64:ff9b::/96, and 6to4 (RFC 3056), 2002::/16.
func nat64(ip netip.Addr) bool {
	b := ip.As16()
	return ip.Is6() && b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && [8]byte(b[4:12]) == [8]byte{}
}

func sixToFour(ip netip.Addr) bool {
	b := ip.As16()
	return ip.Is6() && b[0] == 0x20 && b[1] == 0x02
}

// public reports whether ip is none of the refused ranges, looking through
// IPv4-mapped, NAT64 and 6to4 addresses at the IPv4 address they carry.
func public(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64(ip):
			return public(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour(ip):
			return public(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, p := range refused() {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
