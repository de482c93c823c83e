package postgres

import (
	"errors"
	"strconv"
)

// errArrayText is a malformed array text (array_out's form is expected).
var errArrayText = errors.New("malformed array text")

// appendArrayJSON appends the JSON form of KindArray for b, an array's text
// as array_out writes it: an optional dimension decoration
// "[lower:upper]...=" (written only when some lower bound is not 1), then
// "{...}" nested per dimension, elements separated by the element type's
// delimiter, NULL unquoted for a NULL element, and an element quoted (with
// \" and \\ escapes) when it is empty, reads as NULL or holds a special
// character. Each element's text is converted as a column of the element
// type would be and appended in its kind's JSON form; with a decoration,
// the form is {"lower":[...],"elements":...}, one bound per dimension.
func (c *pgColumn) appendArrayJSON(dst, b []byte) ([]byte, error) {
	var lower []int64
	for len(b) > 0 && b[0] == '[' {
		i := 1
		for i < len(b) && b[i] != ':' {
			i++
		}
		if i >= len(b) {
			return dst, errArrayText
		}
		lb, err := strconv.ParseInt(string(b[1:i]), 10, 32)
		if err != nil {
			return dst, errArrayText
		}
		for i < len(b) && b[i] != ']' {
			i++
		}
		if i >= len(b) {
			return dst, errArrayText
		}
		lower = append(lower, lb)
		b = b[i+1:]
	}
	if lower != nil {
		if len(b) == 0 || b[0] != '=' {
			return dst, errArrayText
		}
		b = b[1:]
		dst = append(dst, `{"lower":[`...)
		for i, lb := range lower {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, lb, 10)
		}
		dst = append(dst, `],"elements":`...)
	}
	dst, rest, err := c.appendArrayLevel(dst, b)
	if err != nil {
		return dst, err
	}
	if len(rest) != 0 {
		return dst, errArrayText
	}
	if lower != nil {
		dst = append(dst, '}')
	}
	return dst, nil
}

// appendArrayLevel appends the JSON array of the "{...}" at the start of b
// and returns what follows it.
func (c *pgColumn) appendArrayLevel(dst, b []byte) ([]byte, []byte, error) {
	if len(b) == 0 || b[0] != '{' {
		return dst, nil, errArrayText
	}
	b = b[1:]
	dst = append(dst, '[')
	if len(b) > 0 && b[0] == '}' {
		return append(dst, ']'), b[1:], nil
	}
	for first := true; ; first = false {
		if !first {
			dst = append(dst, ',')
		}
		var err error
		switch {
		case len(b) == 0:
			return dst, nil, errArrayText
		case b[0] == '{':
			if dst, b, err = c.appendArrayLevel(dst, b); err != nil {
				return dst, nil, err
			}
		case b[0] == '"':
			text := c.text[:0]
			i := 1
			for ; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
					if i == len(b) {
						return dst, nil, errArrayText
					}
				}
				text = append(text, b[i])
			}
			if i == len(b) {
				return dst, nil, errArrayText
			}
			c.text, b = text, b[i+1:]
			if dst, err = c.appendElementJSON(dst, text); err != nil {
				return dst, nil, err
			}
		default:
			i := 0
			for i < len(b) && b[i] != c.delim && b[i] != '}' {
				i++
			}
			if string(b[:i]) == "NULL" {
				dst = append(dst, "null"...)
			} else if dst, err = c.appendElementJSON(dst, b[:i]); err != nil {
				return dst, nil, err
			}
			b = b[i:]
		}
		switch {
		case len(b) == 0:
			return dst, nil, errArrayText
		case b[0] == '}':
			return append(dst, ']'), b[1:], nil
		case b[0] != c.delim:
			return dst, nil, errArrayText
		}
		b = b[1:]
	}
}

// appendElementJSON converts one element's text as the element type's
// column would and appends its JSON form. The text is never empty of a
// NULL: an empty element is quoted.
func (c *pgColumn) appendElementJSON(dst, text []byte) ([]byte, error) {
	if text == nil {
		text = []byte{}
	}
	v, err := c.elem.Convert(text)
	if err != nil {
		return dst, err
	}
	return v.AppendJSON(dst), nil
}
