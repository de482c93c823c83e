// Command runpath follows one run through the source code, from the
// function a run of this node enters first to the store, and counts the
// files it passes through. It is run by `make runpath`, never by
// `make test`:
//
//	go run ./tests/runpath -largest 10
//
// The walk is static, over the syntax and types of the module
// (golang.org/x/tools/go/packages), by these rules:
//
//   - It starts at -from, by default (*adapters.Service).startLocal: every
//     run of this node passes through it, whether the API, the scheduler
//     or another node's hand-off asked for it (StartRun's placing, which
//     may hand the run to another node, comes before it and is not
//     followed).
//   - A function's body is read in source order, depth first. Each call
//     of a function of this module (outside its _test files) enters the
//     callee, the first time only: a function is expanded once, a second
//     call of it is not followed again. `go` and `defer` calls count where
//     they are written; so does a function or method named as a value (a
//     callback, `s.saveRun` handed to a retry); a function literal is part
//     of the function it is written in.
//   - A call of a method of an interface declared in this module enters
//     each implementation among the program's types (every type with the
//     methods, as Go's interfaces are satisfied: an over-approximation of
//     what the run meets), in the order of their package path and name;
//     an interface of another module
//     (error, io.Reader, sort.Interface) is not followed. The program is
//     the module's packages the -from package imports, directly or not,
//     and those of one source (-source, default adapters/mysql) and one
//     store backend (-store, default store/pebble): the run followed is a
//     MySQL table read into Pebble. A call of a method through a type
//     parameter is not followed: its type argument is the one the
//     generic's caller chose. Implementations the -from package
//     only reaches through an interface it is given (cluster's
//     partitioned runs, the other sources) are not in it.
//   - The run followed is one table of a dataset, run on this node: the
//     functions and types of -not (by default a run of several tables and
//     a partitioned run: execute's other branch, the snapshot types they
//     write through) are never entered.
//   - The walk ends at the store: a call of a function of package store
//     or of a package under it (the backend's reads and writes) is where
//     the path reaches the store; it is neither a visit nor expanded.
//
// A visit of a file is entering it: the run's first function, or a call
// from a function of another file that has not visited it yet, into a
// function that goes on into a further file (crossesFiles). A caller
// that uses several functions of a file (a type's methods one after
// another) visits it once; a helper that stays in its file (a key
// encoder, a check) is used, as a library function is, not visited.
// Returning to the caller is not a visit. The program prints each visit
// (file, function entered, the caller's file), the visits of each file,
// the files visited, how many times the walk comes back to a file it
// already left (the visits beyond each file's first), and the files
// visited more than twice. With -largest N it prints the N
// longest functions expanded on the way, in lines of their body.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/snapstore/snapstore"

// defaultNot is what the run followed, one table of a dataset run on
// this node, does not reach: a run of several tables (execute's other
// branch and the snapshot types it writes through) and a partitioned run.
const defaultNot = "adapters.(*Service).pullTables,snapshot.TablesRun,snapshot.TableWriter,snapshot.PartitionedRun,snapshot.PartitionWriter"

func main() {
	from := flag.String("from", "adapters.(*Service).startLocal", "the function the walk starts at: `pkg.Func` or `pkg.(*Type).Method`, pkg relative to the module")
	source := flag.String("source", "adapters/mysql", "the source package whose connector the run reads")
	backend := flag.String("store", "store/pebble", "the store backend the run writes to")
	not := flag.String("not", defaultNot, "comma-separated functions and types (`pkg.Func`, `pkg.(*Type).Method`, `pkg.Type`) of the runs not followed, never entered")
	largest := flag.Int("largest", 0, "also print the N longest functions on the path")
	flag.Parse()
	if err := run(*from, *source, *backend, *not, *largest); err != nil {
		fmt.Fprintln(os.Stderr, "runpath:", err)
		os.Exit(1)
	}
}

func run(from, source, backend, not string, largest int) error {
	fromPkg, _, ok := strings.Cut(from, ".")
	if !ok {
		return fmt.Errorf("-from %q: want pkg.Func or pkg.(*Type).Method", from)
	}
	w, err := load([]string{fromPkg, source, backend})
	if err != nil {
		return err
	}
	root := w.lookup(from)
	if root == nil {
		return fmt.Errorf("-from %q: no such function", from)
	}
	for _, n := range strings.Split(not, ",") {
		if n = strings.TrimSpace(n); n != "" {
			w.not[n] = true
		}
	}
	w.enter(root, "")
	w.report(from, source, backend, largest)
	return nil
}

// walk is the program loaded and the walk's state.
type walk struct {
	fset  *token.FileSet
	root  string                    // the module's directory
	pkgs  []*packages.Package       // the program, by package path
	decls map[*types.Func]*funcDecl // the module's functions with a body
	impls map[*types.Func][]*types.Func
	named []*types.Named // the program's named types, for implementations

	not    map[string]bool // full names of functions and types not entered
	leaf   map[*types.Func]bool
	done   map[*types.Func]bool
	edges  map[[2]string]bool // caller's file, callee's file: visited
	visits []visit
	path   []*funcDecl // expanded, in order
}

type funcDecl struct {
	fn   *types.Func
	decl *ast.FuncDecl
	pkg  *packages.Package
	file string // relative to the module
}

type visit struct {
	file string
	fn   string
	from string // the caller's file
}

// load type-checks the packages under the module named by rel and the
// module's packages they import. Bodies of functions outside the module
// are dropped while parsing: only their types are needed.
func load(rel []string) (*walk, error) {
	var patterns []string
	for _, r := range rel {
		patterns = append(patterns, "./"+r)
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo | packages.NeedModule,
		ParseFile: func(fset *token.FileSet, name string, src []byte) (*ast.File, error) {
			f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution|parser.ParseComments)
			if err != nil || inModule(name) {
				return f, err
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok {
					fd.Body = nil
				}
			}
			return f, nil
		},
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	// Packages of other modules, their bodies dropped, have errors
	// (imports left unused) that do not touch their types.
	var bad int
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if strings.HasPrefix(p.PkgPath, module) {
			for _, err := range p.Errors {
				fmt.Fprintln(os.Stderr, err)
				bad++
			}
		}
	})
	if bad > 0 {
		return nil, fmt.Errorf("loading %s: errors above", strings.Join(rel, ", "))
	}
	dir, _ := os.Getwd()
	w := &walk{fset: pkgs[0].Fset, root: dir, decls: map[*types.Func]*funcDecl{},
		impls: map[*types.Func][]*types.Func{}, done: map[*types.Func]bool{},
		not: map[string]bool{}, leaf: map[*types.Func]bool{}, edges: map[[2]string]bool{}}
	seen := map[*packages.Package]bool{}
	var add func(p *packages.Package)
	add = func(p *packages.Package) {
		if seen[p] || !strings.HasPrefix(p.PkgPath, module) {
			return
		}
		seen[p] = true
		w.pkgs = append(w.pkgs, p)
		for _, ip := range p.Imports {
			add(ip)
		}
	}
	for _, p := range pkgs {
		add(p)
	}
	sort.Slice(w.pkgs, func(i, j int) bool { return w.pkgs[i].PkgPath < w.pkgs[j].PkgPath })
	for _, p := range w.pkgs {
		for _, f := range p.Syntax {
			name := w.fset.File(f.Pos()).Name()
			rel, _ := filepath.Rel(dir, name)
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					if fn, ok := p.TypesInfo.Defs[fd.Name].(*types.Func); ok {
						w.decls[fn] = &funcDecl{fn: fn, decl: fd, pkg: p, file: filepath.ToSlash(rel)}
					}
				}
			}
		}
		scope := p.Types.Scope()
		for _, n := range scope.Names() {
			if tn, ok := scope.Lookup(n).(*types.TypeName); ok && !tn.IsAlias() {
				if nt, ok := tn.Type().(*types.Named); ok && !types.IsInterface(nt) && nt.TypeParams() == nil {
					w.named = append(w.named, nt)
				}
			}
		}
	}
	return w, nil
}

// inModule reports whether file name is a file of this module: under the
// current directory (the module's root, where `make runpath` runs).
func inModule(name string) bool {
	dir, _ := os.Getwd()
	rel, err := filepath.Rel(dir, name)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// lookup finds function name of -from's spelling (see relName).
func (w *walk) lookup(name string) *funcDecl {
	for fn, d := range w.decls {
		if relName(fn) == name {
			return d
		}
	}
	return nil
}

// enter expands d, once: it visits d's file when the caller's is
// another that has not visited it before and d is not a helper (see
// crossesFiles), then enters d's callees in source order. A function of the store is the path's end:
// neither visited nor expanded.
func (w *walk) enter(d *funcDecl, callerFile string) {
	if w.done[d.fn] || isStore(d.fn.Pkg().Path()) {
		return
	}
	w.done[d.fn] = true
	if edge := [2]string{callerFile, d.file}; d.file != callerFile && !w.edges[edge] && w.crossesFiles(d) {
		w.edges[edge] = true
		w.visits = append(w.visits, visit{file: d.file, fn: shortName(d.fn), from: callerFile})
	}
	w.path = append(w.path, d)
	for _, cd := range w.callees(d) {
		w.enter(cd, d.file)
	}
}

// crossesFiles reports whether d calls, itself or through the functions
// of its file it calls, a function of another file of the path (the
// store's are not). A function that does not is a helper: entering it
// does not leave the flow of its caller, as a call of a library function
// would not.
func (w *walk) crossesFiles(d *funcDecl) bool {
	if leaf, ok := w.leaf[d.fn]; ok {
		return !leaf
	}
	w.leaf[d.fn] = true // a cycle within the file stays in it
	cross := false
	for _, cd := range w.callees(d) {
		if isStore(cd.fn.Pkg().Path()) {
			continue
		}
		if cd.file != d.file || w.crossesFiles(cd) {
			cross = true
			break
		}
	}
	w.leaf[d.fn] = !cross
	return cross
}

// callees returns, in source order, the functions of the program d's
// body calls or names, each once: a method of an interface of the module
// stands for each of its implementations. Those of -not are left out.
func (w *walk) callees(d *funcDecl) []*funcDecl {
	var out []*funcDecl
	seen := map[*types.Func]bool{}
	add := func(fn *types.Func) {
		cd := w.decls[fn]
		if cd == nil || seen[fn] || w.excluded(fn) {
			return
		}
		seen[fn] = true
		out = append(out, cd)
	}
	var inspect func(n ast.Node)
	callee := func(id *ast.Ident) {
		fn, ok := d.pkg.TypesInfo.Uses[id].(*types.Func)
		if !ok {
			return
		}
		fn = fn.Origin()
		if fn.Pkg() == nil || !strings.HasPrefix(fn.Pkg().Path(), module) {
			return
		}
		if recv := fn.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
			for _, impl := range w.implementations(fn) {
				add(impl)
			}
			return
		}
		add(fn)
	}
	// A selector's operand comes before its name: a.b().c() calls b
	// before c.
	inspect = func(n ast.Node) {
		ast.Inspect(n, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.Ident:
				callee(m)
			case *ast.SelectorExpr:
				inspect(m.X)
				if sel := d.pkg.TypesInfo.Selections[m]; sel != nil && isTypeParam(sel.Recv()) {
					return false
				}
				callee(m.Sel)
				return false
			}
			return true
		})
	}
	inspect(d.decl.Body)
	return out
}

// isTypeParam reports whether t is a type parameter or a pointer to one:
// the method called is its type argument's, which the generic's caller
// chose.
func isTypeParam(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	_, ok := t.(*types.TypeParam)
	return ok
}

// excluded reports whether fn, or its receiver's type, is in -not.
func (w *walk) excluded(fn *types.Func) bool {
	if w.not[relName(fn)] {
		return true
	}
	if recv := fn.Signature().Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if nt, ok := t.(*types.Named); ok && nt.Obj().Pkg() != nil {
			return w.not[strings.TrimPrefix(nt.Obj().Pkg().Path(), module+"/")+"."+nt.Obj().Name()]
		}
	}
	return false
}

// relName is fn's name as -from and -not spell it: pkg.Func,
// pkg.(*Type).Method or pkg.Type.Method, pkg relative to the module.
func relName(fn *types.Func) string {
	pkg := fn.Pkg().Path()
	name := strings.ReplaceAll(fn.FullName(), pkg+".", "")
	return strings.TrimPrefix(pkg, module+"/") + "." + name
}

// implementations returns the methods of the program's types that
// implement interface method m, by package path and position.
func (w *walk) implementations(m *types.Func) []*types.Func {
	if impls, ok := w.impls[m]; ok {
		return impls
	}
	iface, _ := m.Signature().Recv().Type().Underlying().(*types.Interface)
	var impls []*types.Func
	for _, nt := range w.named {
		for _, t := range []types.Type{nt, types.NewPointer(nt)} {
			if iface == nil || !types.Implements(t, iface) {
				continue
			}
			obj, _, _ := types.LookupFieldOrMethod(t, false, m.Pkg(), m.Name())
			if f, ok := obj.(*types.Func); ok {
				impls = append(impls, f.Origin())
			}
			break
		}
	}
	w.impls[m] = impls
	return impls
}

// isStore reports whether package path is the store contract or a backend.
func isStore(path string) bool {
	return path == module+"/store" || strings.HasPrefix(path, module+"/store/")
}

// shortName is fn's name qualified by its package's last element.
func shortName(fn *types.Func) string {
	return strings.ReplaceAll(fn.FullName(), fn.Pkg().Path(), fn.Pkg().Name())
}

func (w *walk) report(from, source, backend string, largest int) {
	fmt.Printf("run path from %s, source %s, store %s\n\n", from, source, backend)
	count := map[string]int{}
	var order []string
	for i, v := range w.visits {
		if count[v.file] == 0 {
			order = append(order, v.file)
		}
		count[v.file]++
		fmt.Printf("%4d  %-34s %-48s from %s\n", i+1, v.file, v.fn, v.from)
	}
	fmt.Printf("\nvisits per file, in order of the first:\n")
	var more []string
	for _, f := range order {
		fmt.Printf("  %-40s %d\n", f, count[f])
		if count[f] > 2 {
			more = append(more, fmt.Sprintf("%s (%d)", f, count[f]))
		}
	}
	fmt.Printf("\nfiles visited: %d\n", len(order))
	fmt.Printf("visits: %d\n", len(w.visits))
	fmt.Printf("comes back to a file it already left %d times\n", len(w.visits)-len(order))
	fmt.Printf("files visited more than twice: %d", len(more))
	if len(more) > 0 {
		fmt.Printf(": %s", strings.Join(more, ", "))
	}
	fmt.Println()
	if largest <= 0 {
		return
	}
	sorted := append([]*funcDecl(nil), w.path...)
	lines := func(d *funcDecl) int {
		return w.fset.Position(d.decl.Body.Rbrace).Line - w.fset.Position(d.decl.Body.Lbrace).Line - 1
	}
	sort.SliceStable(sorted, func(i, j int) bool { return lines(sorted[i]) > lines(sorted[j]) })
	fmt.Printf("\nlongest functions on the path (lines of the body):\n")
	for _, d := range sorted[:min(largest, len(sorted))] {
		pos := w.fset.Position(d.decl.Pos())
		rel, _ := filepath.Rel(w.root, pos.Filename)
		fmt.Printf("  %4d  %s (%s:%d)\n", lines(d), shortName(d.fn), filepath.ToSlash(rel), pos.Line)
	}
}
