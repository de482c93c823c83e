package snapstore

import (
	"slices"
	"testing"
)

// TestTargets pins the meanings a resource is tried as, in order.
func TestTargets(t *testing.T) {
	for _, c := range []struct {
		resource string
		want     []target
	}{
		{"a@b@c", []target{{"a@b@c", "", ""}, {"a", "", "b@c"}, {"a@b", "", "c"}}},
		{"@x", []target{{"@x", "", ""}}},
		{"shop.public.orders@v1", []target{
			{"shop.public.orders@v1", "", ""},
			{"shop.public.orders", "", "v1"},
			{"shop", "public.orders@v1", ""},
			{"shop", "public.orders", "v1"},
			{"shop.public", "orders@v1", ""},
			{"shop.public", "orders", "v1"},
		}},
		// Quoted parts first; a table's name holds anything.
		{`"shop"."audit/log 100%"@7`, []target{{"shop", "audit/log 100%", "7"}}},
		{`"shop"."a.b"`, []target{{"shop", "a.b", ""}}},
		{`shop.my"table`, []target{{"shop", `my"table`, ""}}},
		// A dataset's name holds no "/" nor space.
		{"a b/c", nil},
	} {
		if got := targets(c.resource); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.resource, got, c.want)
		}
	}
	if got := (target{dataset: "shop", table: "public.orders"}).label(); got != "shop.public.orders" {
		t.Errorf("label %q", got)
	}
}
