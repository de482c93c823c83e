// Package lint holds tests that enforce the project's structural rules, after
// Pebble's internal/lint: the one-way package dependencies (server/cluster ->
// adapters -> snapshot -> txn -> store), which packages may import a storage
// engine or a source driver, error-message habits, comments that speak of the
// code, invariant labels that are unique and resolve, and the package map of
// docs/architecture.md (architecture_test.go).
package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/snapstore/snapstore/"

// layer ranks the top-level packages: a package may import only packages of a
// strictly lower layer (and its own subpackages), as docs/architecture.md
// draws them.
var layer = map[string]int{
	"api":      0,
	"store":    1,
	"txn":      2,
	"records":  2,
	"snapshot": 3,
	"adapters": 4,
	"notify":   5,
	"cluster":  6,
	"server":   6,
	"config":   7,
	"daemon":   8,
	"cmd":      9,
	"tests":    10,
	"internal": 10,
}

// inner ranks the packages inside one top-level package whose order
// matters: a package there may import only packages of a strictly lower
// rank. cluster (membership) and cluster/transfer import no package of the
// module at all (leaf). The console is above the server it is mounted on
// (server.Options.Console) and below daemon, which mounts it.
var (
	inner = map[string]int{
		"cluster":              0,
		"cluster/transfer":     0,
		"cluster/placement":    1,
		"cluster/partitionrun": 2,
		"server":               0,
		"server/console":       1,
	}
	leaf = map[string]bool{"cluster": true, "cluster/transfer": true}
)

// forbidden lists imports that only some packages may use outside tests:
// storage engines stay in their backends, each source driver in its source
// package.
var forbidden = map[string][]string{
	"github.com/cockroachdb/pebble":  {"store/pebble", "cmd"},
	"github.com/apache/thrift":       {"store/hbase"},
	"github.com/go-sql-driver/mysql": {"adapters/mysql"},
	"github.com/jackc/pgx":           {"adapters/postgres"},
	"modernc.org/sqlite":             {"adapters/sqlite", "cmd", "examples"},
}

// Inside adapters, after Prometheus' discovery: the contract
// (adapters/source) imports no other adapters package; each source package
// (adapters/<database>, any folder but these) imports only the contract;
// the Service (adapters) imports only the contract too; adapters/install
// imports the source packages to register them.
const (
	sourceContract = "adapters/source"
	sourceInstall  = "adapters/install"
)

type goFile struct {
	rel  string // path relative to the module root
	test bool
	f    *ast.File
}

func parseModule(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var files []goFile
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "data" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, goFile{rel: filepath.ToSlash(rel), test: strings.HasSuffix(path, "_test.go"), f: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func top(rel string) string {
	if i := strings.IndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return rel
}

// TestPackageLayers checks that dependencies flow one way, between the
// top-level packages (layer) and inside cluster (inner, leaf).
func TestPackageLayers(t *testing.T) {
	for _, gf := range parseModule(t) {
		from := top(gf.rel)
		lf, ok := layer[from]
		if !ok || gf.test {
			continue
		}
		for _, imp := range gf.f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			pkg, imported := path.Dir(gf.rel), strings.TrimPrefix(p, module)
			if leaf[pkg] {
				t.Errorf("%s imports %s: %s imports no package of the module", gf.rel, p, pkg)
			}
			if rf, ok := inner[pkg]; ok {
				if rt, ok := inner[imported]; ok && rt >= rf {
					t.Errorf("%s imports %s: %s (rank %d) may import only lower ranks, not %s (rank %d)", gf.rel, p, pkg, rf, imported, rt)
				}
			}
			to := top(imported)
			if to == from {
				continue
			}
			lt, ok := layer[to]
			if !ok {
				continue
			}
			if lt >= lf && to != "internal" {
				t.Errorf("%s imports %s: %s (layer %d) may import only lower layers, not %s (layer %d)", gf.rel, p, from, lf, to, lt)
			}
		}
	}
}

// TestAPIImportsNothing keeps the wire schema free of the project: the
// config file, the server, the CLI and the console all import it.
func TestAPIImportsNothing(t *testing.T) {
	for _, gf := range parseModule(t) {
		if top(gf.rel) != "api" {
			continue
		}
		for _, imp := range gf.f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, module) {
				t.Errorf("%s imports %s: package api imports nothing of the project", gf.rel, p)
			}
		}
	}
}

// TestSourcePackages checks the imports between the packages of adapters
// (sourceContract).
func TestSourcePackages(t *testing.T) {
	for _, gf := range parseModule(t) {
		if gf.test || top(gf.rel) != "adapters" {
			continue
		}
		from := path.Dir(gf.rel)
		for _, imp := range gf.f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			to := strings.TrimPrefix(p, module)
			if to == p || top(to) != "adapters" || to == from {
				continue
			}
			var ok bool
			switch from {
			case sourceContract:
				ok = false
			case sourceInstall:
				ok = to != "adapters" && to != sourceContract && to != sourceInstall
			default: // the Service and the source packages
				ok = to == sourceContract
			}
			if !ok {
				t.Errorf("%s imports %s: the packages of adapters import the contract (%s) only; %s imports the sources", gf.rel, p, sourceContract, sourceInstall)
			}
		}
	}
}

// TestForbiddenImports keeps storage engines in their backends and each
// source driver in its source package.
func TestForbiddenImports(t *testing.T) {
	for _, gf := range parseModule(t) {
		if gf.test {
			continue
		}
		for _, imp := range gf.f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for prefix, allowed := range forbidden {
				if !strings.HasPrefix(p, prefix) {
					continue
				}
				ok := false
				for _, a := range allowed {
					if gf.rel == a || strings.HasPrefix(gf.rel, a+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s imports %s; only %v may", gf.rel, p, allowed)
				}
			}
		}
	}
}

// TestErrorTexts bans the "failed to" prefix in error texts (Thanos's style
// guide): wrap with what was being done instead.
func TestErrorTexts(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fset := token.NewFileSet()
	for _, gf := range parseModule(t) {
		f, err := parser.ParseFile(fset, filepath.Join(root, gf.rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || !((x.Name == "fmt" && sel.Sel.Name == "Errorf") || (x.Name == "errors" && sel.Sel.Name == "New")) {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			if strings.Contains(strings.ToLower(s), "failed to") {
				t.Errorf("%s: error text %q: say what was being done, not \"failed to\"", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}

// history matches comments that speak of how the code was made rather than
// of the code: issue numbers, notes files that are not in the repository,
// and the design brief, which lives outside it (docs/semantics.md and the
// packages' invariant labels are what to cite).
var history = regexp.MustCompile(`(?i)\bissue [0-9]|newuser\.md|e2e\.md|DESIGN\.md|\bDESIGN [0-9]`)

// TestCommentsSpeakOfTheCode fails on comments that cite issues or notes.
func TestCommentsSpeakOfTheCode(t *testing.T) {
	for _, gf := range parseModule(t) {
		for _, cg := range gf.f.Comments {
			for _, c := range cg.List {
				if m := history.FindString(c.Text); m != "" {
					t.Errorf("%s: comment cites %q; say what the code does instead", gf.rel, m)
				}
			}
		}
	}
}

// labelDef matches the definition of an invariant label at the start of a
// comment line ("// D5. Delta writes."), labelRef a citation, qualified
// ("txn.I5") or not ("D5", and ranges like "D1-D4" cite both ends).
var (
	labelDef = regexp.MustCompile(`^//\s*([A-Z])([0-9]+)\.\s`)
	labelRef = regexp.MustCompile(`\b(?:([a-z]+)\.)?([A-Z])([0-9]+)\b`)
)

// TestInvariantLabels checks that each invariant letter is defined by one
// package only (labels are cited module-wide, Pebble's internal/manifest
// style), that no label is defined twice, and that every citation resolves:
// a qualified one ("store.S1") in the package it names, an unqualified one
// in the package of the citing file.
func TestInvariantLabels(t *testing.T) {
	files := parseModule(t)
	pkgOf := func(rel string) string { return path.Dir(rel) }
	defs := map[string]map[string]bool{} // package -> label -> defined
	letterPkg := map[string]string{}
	for _, gf := range files {
		if gf.test {
			continue
		}
		pkg := pkgOf(gf.rel)
		for _, cg := range gf.f.Comments {
			for _, c := range cg.List {
				m := labelDef.FindStringSubmatch(c.Text)
				if m == nil {
					continue
				}
				label := m[1] + m[2]
				if p, ok := letterPkg[m[1]]; ok && p != pkg {
					t.Errorf("%s defines %s, but letter %s belongs to package %s", gf.rel, label, m[1], p)
					continue
				}
				letterPkg[m[1]] = pkg
				if defs[pkg] == nil {
					defs[pkg] = map[string]bool{}
				}
				if defs[pkg][label] {
					t.Errorf("%s defines %s again", gf.rel, label)
				}
				defs[pkg][label] = true
			}
		}
	}
	byName := map[string]string{} // last path element -> package dir
	for pkg := range defs {
		byName[path.Base(pkg)] = pkg
	}
	for _, gf := range files {
		pkg := pkgOf(gf.rel)
		for _, cg := range gf.f.Comments {
			for _, c := range cg.List {
				for _, m := range labelRef.FindAllStringSubmatch(c.Text, -1) {
					qual, letter, label := m[1], m[2], m[2]+m[3]
					owner, isLabel := letterPkg[letter]
					if !isLabel {
						continue // not an invariant letter: a column name, a key
					}
					switch {
					case qual != "":
						if p, ok := byName[qual]; ok && !defs[p][label] {
							t.Errorf("%s cites %s.%s, which package %s does not define", gf.rel, qual, label, p)
						}
					case owner == pkg:
						if !defs[owner][label] {
							t.Errorf("%s cites %s, which its package does not define", gf.rel, label)
						}
					default:
						t.Errorf("%s cites %s unqualified; it is %s's: write %s.%s", gf.rel, label, owner, path.Base(owner), label)
					}
				}
			}
		}
	}
}
