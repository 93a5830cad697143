package signing

import (
	"bytes"
	"encoding/asn1"
	"math/big"
	"testing"
)

func der(t *testing.T, r, s *big.Int) []byte {
	t.Helper()
	b, err := asn1.Marshal(struct{ R, S *big.Int }{r, s})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRawSignature(t *testing.T) {
	full := new(big.Int).Lsh(big.NewInt(1), 255)                                 // top bit set: 33 bytes in DER
	short := new(big.Int).SetBytes(bytes.Repeat([]byte{0x7f}, 31))               // 31 bytes
	tiny := big.NewInt(5)                                                        // 1 byte
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)) // 32 x 0xff
	pad := func(n *big.Int) []byte { return n.FillBytes(make([]byte, 32)) }

	for _, tc := range []struct {
		name string
		r, s *big.Int
	}{
		{"both 33 bytes in DER", full, max},
		{"short r", short, full},
		{"short s", full, short},
		{"tiny r and s", tiny, tiny},
	} {
		got, err := RawSignature(der(t, tc.r, tc.s))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := append(pad(tc.r), pad(tc.s)...)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %x, want %x", tc.name, got, want)
		}
	}

	tooBig := new(big.Int).Lsh(big.NewInt(1), 256)
	for name, in := range map[string][]byte{
		"r over 256 bits": der(t, tooBig, tiny),
		"negative s":      der(t, tiny, big.NewInt(-1)),
		"zero r":          der(t, big.NewInt(0), tiny),
		"trailing bytes":  append(der(t, tiny, tiny), 0),
		"not DER":         []byte{1, 2, 3},
		"empty":           nil,
	} {
		if _, err := RawSignature(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
