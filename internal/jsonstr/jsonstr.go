// Package jsonstr writes JSON strings without reflection, for the hand-built
// responses of packages snapshot and server.
//
// Append writes exactly what encoding/json.Marshal writes for a Go string
// (RFC 8259 section 7, with encoding/json's HTML-safe choices), so that a
// response built by hand and one built by encoding/json agree byte for byte:
//
//   - '"' and '\' as \" and \\; \b, \f, \n, \r and \t as those two-byte
//     escapes; every other byte below 0x20 as \u00XX (lowercase hex);
//   - '<', '>' and '&' as \u003c, \u003e and \u0026, so the text is safe to
//     embed in HTML;
//   - U+2028 and U+2029 as \u2028 and \u2029, so the text is safe to embed
//     in JavaScript;
//   - every other valid UTF-8 sequence, DEL (0x7f) included, as is.
//
// Invalid UTF-8: each byte that does not begin a valid UTF-8 sequence is
// written as \ufffd (U+FFFD, the replacement character), as encoding/json
// does. The output is therefore always valid JSON and valid UTF-8, and a
// string that is not valid UTF-8 does not round-trip: callers that must
// keep arbitrary bytes encode them (snapshot writes binary kinds as base64).
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// plain marks the ASCII bytes written as they are (the package comment).
var plain = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// Append appends s to dst as a quoted JSON string, as described in the
// package comment, and returns the extended buffer.
func Append[S ~[]byte | ~string](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending, to be copied as is
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		r, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
