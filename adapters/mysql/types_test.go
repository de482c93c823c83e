package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
)

// TestMySQLUnsupportedType: MariaDB 10.11 has no type outside the type
// table; a future one is refused, naming the column.
func TestMySQLUnsupportedType(t *testing.T) {
	if _, err := mysqlKind(&mysqlColumn{name: "v", dataType: "vector", columnType: "vector(2)"}, false); !errors.Is(err, source.ErrUnsupportedType) || !strings.Contains(err.Error(), `"v"`) {
		t.Errorf("unsupported: %v", err)
	}
}
