package postgres

import (
	"strings"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
)

// TestArrayJSON converts array texts as array_out writes them, and
// refuses texts that are not in its form.
func TestArrayJSON(t *testing.T) {
	ints := &pgColumn{name: "a", typeName: "integer[]", kind: snapshot.KindArray, conv: pgArray, delim: ',',
		elem: &pgColumn{name: "a", typeName: "integer", kind: snapshot.KindInt, conv: pgInt}}
	texts := &pgColumn{name: "a", typeName: "text[]", kind: snapshot.KindArray, conv: pgArray, delim: ',',
		elem: &pgColumn{name: "a", typeName: "text", kind: snapshot.KindString, conv: pgText}}
	for _, c := range []struct {
		col       *pgColumn
		text, out string
	}{
		{ints, `{}`, `[]`},
		{ints, `{1,NULL,-3}`, `[1,null,-3]`},
		{ints, `{{1,2},{3,4}}`, `[[1,2],[3,4]]`},
		{ints, `[0:1]={5,6}`, `{"lower":[0],"elements":[5,6]}`},
		{ints, `[-2:-2][3:4]={{7,8}}`, `{"lower":[-2,3],"elements":[[7,8]]}`},
		{texts, `{"","NULL","a\\b","q\"",x}`, `["","NULL","a\\b","q\"","x"]`},
	} {
		v, err := c.col.Convert([]byte(c.text))
		if err != nil || v.Kind != snapshot.KindArray || string(v.Bytes) != c.out {
			t.Errorf("%s: %s, %v; want %s", c.text, v.Bytes, err, c.out)
		}
	}
	for _, bad := range []string{``, `{`, `{1,2`, `{1}x`, `[0:1]{1,2}`, `[x:1]={1}`, `{"a}`, `{1;2}`, `{{1},2`} {
		if _, err := ints.Convert([]byte(bad)); err == nil || !strings.Contains(err.Error(), `column "a"`) {
			t.Errorf("%q: %v, want an error naming the column", bad, err)
		}
	}
}
