package engine

import "encoding/binary"

// The standard decoders allocate the whole image as soon as they have read
// its header, so a file of a hundred bytes that claims 14000 x 14000 pixels
// at 16 bits buys a 1.5 GB allocation before it fails. TooShort refuses
// such a file first: its compressed data cannot hold the image it claims.

// maxDeflateRatio is the most deflate can expand: a 258-byte match in
// about two bits, some 1032:1.
const maxDeflateRatio = 1032

// TooShort reports whether data, a PNG or JPEG file (by its signature),
// holds fewer compressed bytes than the smallest encoding of the image its
// header claims. Anything it cannot read is left to the decoder.
func TooShort(data []byte) bool {
	switch {
	case len(data) >= 8 && string(data[:8]) == "\x89PNG\r\n\x1a\n":
		return pngTooShort(data)
	case len(data) >= 3 && string(data[:3]) == "\xff\xd8\xff":
		return jpegTooShort(data)
	}
	return false
}

// pngTooShort: the pixels' bytes (without the filter bytes, a lower bound)
// must fit in the IDAT chunks' bytes expanded at deflate's best ratio.
func pngTooShort(data []byte) bool {
	var width, height, bits uint64
	var idat uint64
	for p := 8; p+8 <= len(data); {
		n := uint64(binary.BigEndian.Uint32(data[p:]))
		kind := string(data[p+4 : p+8])
		body := data[p+8:]
		if uint64(len(body)) < n {
			body = body[:len(body):len(body)]
		} else {
			body = body[:n]
		}
		switch kind {
		case "IHDR":
			if len(body) < 13 {
				return false
			}
			width, height = uint64(binary.BigEndian.Uint32(body)), uint64(binary.BigEndian.Uint32(body[4:]))
			depth := uint64(body[8])
			channels := map[byte]uint64{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[body[9]]
			bits = depth * channels
		case "IDAT":
			idat += uint64(len(body))
		case "IEND":
			p = len(data)
			continue
		}
		if n > uint64(len(data)) {
			break
		}
		p += 12 + int(n)
	}
	if bits == 0 {
		return false
	}
	pixelBytes := (width*height*bits + 7) / 8
	return idat*maxDeflateRatio < pixelBytes
}

// jpegTooShort: every block of a scan's component costs at least one bit
// (a Huffman code of its DC coefficient), and the first scan has at least
// one block per MCU, so the bytes after the first SOS must number at least
// the MCUs over eight.
func jpegTooShort(data []byte) bool {
	var width, height, hmax, vmax uint64
	for p := 2; p+4 <= len(data); {
		if data[p] != 0xff {
			return false
		}
		marker := data[p+1]
		if marker == 0xff { // fill byte
			p++
			continue
		}
		n := int(binary.BigEndian.Uint16(data[p+2:]))
		if n < 2 || p+2+n > len(data) {
			return false
		}
		seg := data[p+4 : p+2+n]
		switch {
		case marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc: // SOFn
			if len(seg) < 6 {
				return false
			}
			height, width = uint64(binary.BigEndian.Uint16(seg[1:])), uint64(binary.BigEndian.Uint16(seg[3:]))
			comps := int(seg[5])
			for i := 0; i < comps && 6+3*i+1 < len(seg); i++ {
				hv := seg[6+3*i+1]
				hmax, vmax = max(hmax, uint64(hv>>4)), max(vmax, uint64(hv&15))
			}
		case marker == 0xda: // SOS: the entropy-coded data follows
			if width == 0 || height == 0 || hmax == 0 || vmax == 0 {
				return false
			}
			mcus := ((width + 8*hmax - 1) / (8 * hmax)) * ((height + 8*vmax - 1) / (8 * vmax))
			rest := uint64(len(data) - (p + 2 + n))
			return rest*8 < mcus
		}
		p += 2 + n
	}
	return false
}
