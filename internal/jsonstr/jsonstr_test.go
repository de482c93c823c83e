package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// cases covers every class of the package comment: plain text, each named
// escape, the other control bytes, the HTML and JavaScript escapes, multibyte
// UTF-8, and invalid UTF-8 (stray continuation bytes, truncated and overlong
// sequences, surrogates, bytes above U+10FFFF).
var cases = []struct {
	name, in, want string
}{
	{"empty", "", `""`},
	{"plain", "hello, world", `"hello, world"`},
	{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
	{"named escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
	{"other controls", "\x00\x01\x0b\x1f", `"\u0000\u0001\u000b\u001f"`},
	{"DEL as is", "\x7f", "\"\x7f\""},
	{"HTML", "<a href='x'>&</a>", `"\u003ca href='x'\u003e\u0026\u003c/a\u003e"`},
	{"line and paragraph separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
	{"multibyte", "é€😀", `"é€😀"`},
	{"stray continuation", "a\x80b", `"a\ufffdb"`},
	{"invalid lead", "\xff", `"\ufffd"`},
	{"truncated at end", "x\xe2\x82", `"x\ufffd\ufffd"`},
	{"truncated before ASCII", "\xe2\x82a", `"\ufffd\ufffda"`},
	{"overlong", "\xc0\xaf", `"\ufffd\ufffd"`},
	{"surrogate", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
	{"above U+10FFFF", "\xf4\x90\x80\x80", `"\ufffd\ufffd\ufffd\ufffd"`},
	{"U+FFFD itself", "\uFFFD", "\"\uFFFD\""},
}

// TestAppendMatchesEncodingJSON pins the output of each case and checks that
// it is what encoding/json writes, for string and []byte input.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			std, err := json.Marshal(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(std) != c.want {
				t.Fatalf("encoding/json writes %s, the table says %s", std, c.want)
			}
			if got := Append(nil, c.in); string(got) != c.want {
				t.Errorf("Append(string) = %s, want %s", got, c.want)
			}
			if got := Append([]byte("prefix"), []byte(c.in)); string(got) != "prefix"+c.want {
				t.Errorf("Append([]byte) = %s, want prefix%s", got, c.want)
			}
		})
	}
}

// TestAppendEveryByte compares with encoding/json for each single byte and
// each byte inside valid text, so no byte value is left out of the table.
func TestAppendEveryByte(t *testing.T) {
	for b := 0; b < 256; b++ {
		for _, in := range []string{string([]byte{byte(b)}), "é" + string([]byte{byte(b)}) + "z"} {
			std, _ := json.Marshal(in)
			if got := Append(nil, in); string(got) != string(std) {
				t.Errorf("byte %#02x in %q: Append = %s, encoding/json = %s", b, in, got, std)
			}
		}
	}
}

// FuzzAppend checks, for any input, that the output is what encoding/json
// writes, is valid UTF-8, and decodes back to the input when it was valid
// UTF-8.
func FuzzAppend(f *testing.F) {
	for _, c := range cases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := Append(nil, in)
		std, _ := json.Marshal(in)
		if string(got) != string(std) {
			t.Fatalf("Append(%q) = %s, encoding/json = %s", in, got, std)
		}
		if !utf8.Valid(got) {
			t.Fatalf("Append(%q) = %q is not valid UTF-8", in, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Append(%q) = %s does not decode: %v", in, got, err)
		}
		if utf8.ValidString(in) && back != in {
			t.Fatalf("Append(%q) decodes to %q", in, back)
		}
		if !utf8.ValidString(in) && !strings.ContainsRune(back, utf8.RuneError) {
			t.Fatalf("invalid input %q decodes to %q without U+FFFD", in, back)
		}
	})
}
