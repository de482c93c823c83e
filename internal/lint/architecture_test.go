package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mapRow is one file's row of docs/architecture.md's package map.
type mapRow struct {
	file    string // relative to the module root
	concept string // the second column
	line    int    // in docs/architecture.md
}

// packageMap reads the "## Package map" section of docs/architecture.md:
// each "### dir" heading is followed by a table whose first column names
// the files of dir (or of its subdirectories, as "sub/file.go"). It returns
// the rows and the headings.
func packageMap(t *testing.T) (rows []mapRow, dirs []string) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	doc, err := os.ReadFile(filepath.Join(root, "docs/architecture.md"))
	if err != nil {
		t.Fatalf("reading the package map: %v", err)
	}
	lines := strings.Split(string(doc), "\n")
	in, dir := false, ""
	cell := regexp.MustCompile("^\\| `([^`]+\\.go)` \\|(.*)\\|\\s*$")
	for i, line := range lines {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Package map")
			continue
		}
		if !in {
			continue
		}
		if h, ok := strings.CutPrefix(line, "### "); ok {
			dir = strings.TrimSpace(h)
			dirs = append(dirs, dir)
			continue
		}
		if m := cell.FindStringSubmatch(line); m != nil && dir != "" {
			rows = append(rows, mapRow{file: path.Join(dir, m[1]), concept: m[2], line: i + 1})
		}
	}
	if len(dirs) == 0 {
		t.Fatal("docs/architecture.md has no \"## Package map\" section with package headings")
	}
	return rows, dirs
}

// TestArchitectureMap checks that docs/architecture.md's package map names
// every non-test Go file of the module, and no file that is not there, and
// that each Go identifier a row names in backquotes is declared in that
// row's file (see declaredIn).
func TestArchitectureMap(t *testing.T) {
	rows, _ := packageMap(t)
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r.file] = true
	}
	inTree := map[string]bool{}
	for _, gf := range parseModule(t) {
		inTree[gf.rel] = true // a test file may be listed, as lint_test.go is
		if gf.test {
			continue
		}
		if !listed[gf.rel] {
			t.Errorf("%s is not in docs/architecture.md's package map", gf.rel)
		}
	}
	root, _ := filepath.Abs("../..")
	for _, r := range rows {
		if !inTree[r.file] {
			t.Errorf("docs/architecture.md's package map lists %s, which is not in the tree", r.file)
			continue
		}
		names, err := declaredIn(filepath.Join(root, r.file))
		if err != nil {
			t.Errorf("reading %s: %v", r.file, err)
			continue
		}
		for _, sym := range mapSymbols(r.concept) {
			if !names[sym] {
				t.Errorf("docs/architecture.md:%d names `%s` in the row of %s, which declares no such identifier", r.line, sym, r.file)
			}
		}
	}
}

// symbolText matches a backquoted text that reads as a Go identifier, a
// pointer to one, or a qualified one (Type.Method, pkg.Name).
var symbolText = regexp.MustCompile(`^\*?([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?$`)

// mapSymbols returns the identifiers of a row's text that must be declared
// in its file: a backquoted name with an upper-case letter (`Open`,
// `peerClosed`; a command, flag or YAML key such as `serve` or `max_open`
// has none) and a backquoted Type.member. A name qualified by a lower-case
// word (`transfer.Handler`, `store.S1`) belongs to another package and is
// not checked.
func mapSymbols(concept string) []string {
	var syms []string
	parts := strings.Split(concept, "`")
	for i := 1; i < len(parts); i += 2 {
		m := symbolText.FindStringSubmatch(parts[i])
		switch {
		case m == nil:
		case m[2] != "":
			if ast.IsExported(m[1]) {
				syms = append(syms, m[1]+"."+m[2])
			}
		case strings.ToLower(m[1]) != m[1]:
			syms = append(syms, m[1])
		}
	}
	return syms
}

// declaredIn returns the names a Go file declares at top level: functions,
// types, constants and variables, each method as both Type.Method and
// Method, and each field or interface method of its types as both
// Type.Field and Field.
func declaredIn(file string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names[d.Name.Name] = true
			if d.Recv != nil && len(d.Recv.List) > 0 {
				names[receiverType(d.Recv.List[0].Type)+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
					for _, m := range members(s.Type) {
						names[m] = true
						names[s.Name.Name+"."+m] = true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names, nil
}

// receiverType is the type name of a method's receiver (T of *T, T[K]).
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// members lists the fields of a struct type or the methods of an interface
// type, embedded ones by their type's name.
func members(e ast.Expr) []string {
	var list *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
		if len(f.Names) == 0 {
			if n := receiverType(f.Type); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}
