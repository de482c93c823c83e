package source

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func testCatalog() Catalog {
	tb := func(schema, name string) Resource { return Resource{Schema: schema, Name: name, Type: "table"} }
	return Catalog{
		DefaultSchema: "public",
		Quote:         '"',
		Resources: []Resource{
			tb("public", "orders"), tb("public", "order_lines"), tb("public", "audit_log"),
			{Schema: "public", Name: "order_totals", Type: "view"},
			tb("sales", "orders"), tb("sales", "audit_2024"), tb("sales", "my.table"),
			tb("hr", "people"), tb("hr", "audit_log"),
		},
	}
}

func names(rs []Resource) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Schema+"."+r.Name)
	}
	return strings.Join(s, " ")
}

func TestSelectTables(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  TableSelection
		want string
	}{
		{"resources in the default schema", TableSelection{Resources: []string{"orders", "order_lines"}}, "public.order_lines public.orders"},
		{"qualified resource", TableSelection{Resources: []string{"sales.orders"}}, "sales.orders"},
		{"quoted resource with a dot", TableSelection{Resources: []string{`sales."my.table"`}}, "sales.my.table"},
		{"a view by name", TableSelection{Resources: []string{"order_totals"}}, "public.order_totals"},
		{"a name the default schema holds, among others", TableSelection{Resources: []string{"audit_log"}}, "public.audit_log"},
		{"a name one other schema holds", TableSelection{Resources: []string{"people"}}, "hr.people"},
		{"everything", TableSelection{}, "hr.audit_log hr.people public.audit_log public.order_lines public.orders sales.audit_2024 sales.my.table sales.orders"},
		{"schema pattern, table exclude in every schema", TableSelection{Include: []string{"public.*"}, Exclude: []string{"audit_*"}}, "public.order_lines public.orders"},
		{"name pattern in every schema", TableSelection{Include: []string{"order*"}}, "public.order_lines public.orders sales.orders"},
		{"exclude alone", TableSelection{Exclude: []string{"audit_*", "sales.*"}}, "hr.people public.order_lines public.orders"},
		{"resources and patterns, each once", TableSelection{Resources: []string{"orders"}, Include: []string{"public.order*", "hr.p?ople"}}, "hr.people public.order_lines public.orders"},
		{"character class", TableSelection{Include: []string{"[hs]*.audit_*"}}, "hr.audit_log sales.audit_2024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectTables(tc.sel, testCatalog())
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Fatalf("got %q, want %q", names(got), tc.want)
			}
		})
	}
}

func TestSelectTablesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  TableSelection
		is   []error
		text string
	}{
		{"missing resource", TableSelection{Resources: []string{"orders", "ordrs"}}, []error{ErrResourceNotFound}, `"ordrs"`},
		{"bad include", TableSelection{Include: []string{"public.*", "[a-"}}, []error{ErrBadSelection, path.ErrBadPattern}, `include[1] "[a-"`},
		{"bad exclude", TableSelection{Resources: []string{"orders"}, Exclude: []string{`\`}}, []error{ErrBadSelection, path.ErrBadPattern}, `exclude[0]`},
		{"empty pattern", TableSelection{Include: []string{""}}, []error{ErrBadSelection}, "include[0] is empty"},
		{"nothing matches", TableSelection{Include: []string{"nosuch_*"}}, []error{ErrResourceNotFound, ErrIncludeMatchesNothing}, `no table matches include ["nosuch_*"]`},
		{"all excluded", TableSelection{Include: []string{"audit_*"}, Exclude: []string{"*"}}, []error{ErrBadSelection, ErrResourceNotFound}, "every table include [\"audit_*\"] matches is excluded"},
		{"named and excluded", TableSelection{Resources: []string{"audit_log"}, Exclude: []string{"audit_*"}}, []error{ErrBadSelection}, `"audit_log" is named and excluded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SelectTables(tc.sel, testCatalog())
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("%v: not %v", err, want)
				}
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q does not say %q", err, tc.text)
			}
		})
	}
}

// TestSelectTablesAmbiguousElsewhere: with a default schema, a name two
// other schemas hold is ambiguous, naming them and the resource's
// position.
func TestSelectTablesAmbiguousElsewhere(t *testing.T) {
	cat := testCatalog()
	cat.Resources = append(cat.Resources, Resource{Schema: "hr", Name: "widgets"}, Resource{Schema: "sales", Name: "widgets"})
	_, err := SelectTables(TableSelection{Resources: []string{"orders", "widgets"}}, cat)
	var re *ResourceError
	if !errors.Is(err, ErrBadSelection) || !errors.As(err, &re) || re.Index != 1 || !strings.Contains(err.Error(), `"widgets" is in schemas hr, sales`) {
		t.Fatalf("widgets in hr and sales: %v", err)
	}
}

// TestSelectTablesUnmatched: the include patterns that match no table are
// named, by position, whether or not the others select tables; a pattern
// that matches only excluded tables, or a view, is no typo, or is one.
func TestSelectTablesUnmatched(t *testing.T) {
	for _, tc := range []struct {
		sel  TableSelection
		want string
	}{
		{TableSelection{Include: []string{"order*", "ordr_lines", "hr.*"}}, `include[1] "ordr_lines"`},
		{TableSelection{Include: []string{"audit_*"}, Exclude: []string{"audit_log"}}, ""},
		{TableSelection{Include: []string{"order_totals", "nosuch.*"}}, `include[0] "order_totals" include[1] "nosuch.*"`},
		{TableSelection{Resources: []string{"orders"}}, ""},
	} {
		if got := strings.Join(tc.sel.Unmatched(testCatalog()), " "); got != tc.want {
			t.Errorf("%+v: unmatched %q, want %q", tc.sel, got, tc.want)
		}
	}
	// One pattern that matches nothing beside one that matches: the
	// selection resolves to what the other selects.
	got, err := SelectTables(TableSelection{Include: []string{"order*", "ordr_lines"}}, testCatalog())
	if err != nil || names(got) != "public.order_lines public.orders sales.orders" {
		t.Errorf("selection with one unmatched pattern: %q, %v", names(got), err)
	}
}

// TestSelectTablesAmbiguous: without a default schema, a name two schemas
// hold must be qualified; one schema's name needs no schema.
func TestSelectTablesAmbiguous(t *testing.T) {
	cat := testCatalog()
	cat.DefaultSchema = ""
	if _, err := SelectTables(TableSelection{Resources: []string{"orders"}}, cat); !errors.Is(err, ErrBadSelection) || !strings.Contains(err.Error(), "public, sales") {
		t.Fatalf("ambiguous name: %v", err)
	}
	got, err := SelectTables(TableSelection{Resources: []string{"people"}}, cat)
	if err != nil || names(got) != "hr.people" {
		t.Fatalf("got %q, %v", names(got), err)
	}
}

// TestSelectTablesNoSchema: a catalog whose resources have no schema
// (SQLite) is matched under its default schema.
func TestSelectTablesNoSchema(t *testing.T) {
	cat := Catalog{DefaultSchema: "main", Quote: '"', Resources: []Resource{{Name: "b", Type: "table"}, {Name: "a", Type: "table"}, {Name: "v", Type: "view"}}}
	got, err := SelectTables(TableSelection{Include: []string{"main.*"}}, cat)
	if err != nil || names(got) != ".a .b" {
		t.Fatalf("got %q, %v", names(got), err)
	}
	got, err = SelectTables(TableSelection{Resources: []string{"main.v", "a"}}, cat)
	if err != nil || names(got) != ".a .v" {
		t.Fatalf("got %q, %v", names(got), err)
	}
}

// TestSelectTablesEverySlash: with neither resources nor include every
// table is selected, a name holding a '/' too (path.Match's '*' does not
// cross one), and exclude still applies to it.
func TestSelectTablesEverySlash(t *testing.T) {
	cat := Catalog{DefaultSchema: "public", Quote: '"', Resources: []Resource{
		{Schema: "public", Name: "a/b", Type: "table"}, {Schema: "public", Name: "c", Type: "table"}, {Schema: "public", Name: "d/e", Type: "table"}}}
	got, err := SelectTables(TableSelection{}, cat)
	if err != nil || names(got) != "public.a/b public.c public.d/e" {
		t.Fatalf("every table: got %q, %v", names(got), err)
	}
	got, err = SelectTables(TableSelection{Exclude: []string{"d/*"}}, cat)
	if err != nil || names(got) != "public.a/b public.c" {
		t.Fatalf("every table but d/*: got %q, %v", names(got), err)
	}
}

// TestSelectTablesNameNoDatasetHolds: a table whose name in the dataset
// no dataset can hold (over 200 bytes, a control character) is refused as
// a bad selection naming it; excluded, the others are selected.
func TestSelectTablesNameNoDatasetHolds(t *testing.T) {
	long := strings.Repeat("t", 194)
	cat := Catalog{DefaultSchema: "public", Quote: '"', Resources: []Resource{
		{Schema: "public", Name: long, Type: "table"}, {Schema: "public", Name: "a\tb", Type: "table"}, {Schema: "public", Name: "c", Type: "table"}}}
	for _, tc := range []struct{ exclude, text string }{
		{"a*", "must have 1 to 200 bytes of UTF-8"},
		{"t*", "holds a control character"},
	} {
		_, err := SelectTables(TableSelection{Exclude: []string{tc.exclude}}, cat)
		if !errors.Is(err, ErrBadSelection) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("exclude %s: %v", tc.exclude, err)
		}
	}
	if got, err := SelectTables(TableSelection{Exclude: []string{"a*", "t*"}}, cat); err != nil || names(got) != "public.c" {
		t.Errorf("both excluded: got %q, %v", names(got), err)
	}
	if got, err := SelectTables(TableSelection{Include: []string{"t*"}}, Catalog{Resources: []Resource{{Name: long, Type: "table"}}}); err != nil || len(got) != 1 {
		t.Errorf("%d bytes without a schema: got %q, %v", len(long), names(got), err)
	}
}

// TestSelectTablesSameName: two tables whose "schema.table" is the same
// text (a dot in a schema or table name) are refused as a bad selection
// naming both, quoted; either alone is selected.
func TestSelectTablesSameName(t *testing.T) {
	cat := Catalog{DefaultSchema: "public", Quote: '"', Resources: []Resource{
		{Schema: "s.x", Name: "y", Type: "table"}, {Schema: "s", Name: "x.y", Type: "table"}, {Schema: "s", Name: "z", Type: "table"}}}
	_, err := SelectTables(TableSelection{Include: []string{"*"}}, cat)
	if !errors.Is(err, ErrBadSelection) || !strings.Contains(err.Error(), `tables "s"."x.y" and "s.x"."y" would both be "s.x.y"`) {
		t.Fatalf("two tables of one name: %v", err)
	}
	got, err := SelectTables(TableSelection{Resources: []string{`"s.x"."y"`, "s.z"}}, cat)
	if err != nil || names(got) != "s.z s.x.y" {
		t.Fatalf("one of them by its quoted name: got %q, %v", names(got), err)
	}
}

// TestSelectTablesDottedSchema: a pattern with a dot is a schema pattern
// and a table pattern, each matching its own name: "public.*" selects
// the tables of schema public, a table with a dot in its name included,
// and none of a schema "public.archive"; a pattern naming that schema
// selects its tables, and exclude follows the same rule.
func TestSelectTablesDottedSchema(t *testing.T) {
	cat := Catalog{DefaultSchema: "public", Quote: '"', Resources: []Resource{
		{Schema: "public", Name: "orders", Type: "table"}, {Schema: "public", Name: "my.table", Type: "table"},
		{Schema: "public.archive", Name: "orders", Type: "table"}, {Schema: "public.archive", Name: "lines", Type: "table"}}}
	for _, tc := range []struct {
		sel  TableSelection
		want string
	}{
		{TableSelection{Include: []string{"public.*"}}, "public.my.table public.orders"},
		{TableSelection{Include: []string{"public.a*"}}, ""},
		{TableSelection{Include: []string{"public.my.*"}}, "public.my.table"},
		{TableSelection{Include: []string{"public.archive.*"}}, "public.archive.lines public.archive.orders"},
		{TableSelection{Include: []string{"*.lines"}}, "public.archive.lines"},
		{TableSelection{Include: []string{"lines", "public.*"}, Exclude: []string{"public.o*"}}, "public.my.table public.archive.lines"},
	} {
		got, err := SelectTables(tc.sel, cat)
		if tc.want == "" {
			if !errors.Is(err, ErrIncludeMatchesNothing) {
				t.Errorf("%+v: got %q, %v; want no table", tc.sel, names(got), err)
			}
			continue
		}
		if err != nil || names(got) != tc.want {
			t.Errorf("%+v: got %q, %v; want %q", tc.sel, names(got), err, tc.want)
		}
	}
}
