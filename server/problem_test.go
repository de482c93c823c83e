package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
)

// exportedSentinels parses the non-test sources of a package directory and
// returns the names of its exported package-level Err* variables.
func exportedSentinels(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, sp := range gd.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no sentinels found in %s", dir)
	}
	return names
}

// TestProblemFor_EverySentinel checks that every exported sentinel of
// snapshot, adapters and store maps to a stable code and a non-500 status,
// and that the table below lists them all: a new sentinel fails this test
// until it is given a code.
func TestProblemFor_EverySentinel(t *testing.T) {
	known := map[string]map[string]error{
		"snapshot": {
			"ErrDatasetNotFound": snapshot.ErrDatasetNotFound, "ErrNoVersion": snapshot.ErrNoVersion,
			"ErrVersionNotKept": snapshot.ErrVersionNotKept, "ErrTagNotFound": snapshot.ErrTagNotFound,
			"ErrRowNotFound": snapshot.ErrRowNotFound, "ErrRunInProgress": snapshot.ErrRunInProgress,
			"ErrGuardRefused": snapshot.ErrGuardRefused, "ErrBadKey": snapshot.ErrBadKey,
			"ErrDuplicateKey": snapshot.ErrDuplicateKey,
			"ErrBadSchema":    snapshot.ErrBadSchema, "ErrKeyChanged": snapshot.ErrKeyChanged,
			"ErrRunClosed": snapshot.ErrRunClosed, "ErrRecordNotFound": snapshot.ErrRecordNotFound,
			"ErrBadPageToken": snapshot.ErrBadPageToken, "ErrInvalidArgument": snapshot.ErrInvalidArgument,
			"ErrClosed": snapshot.ErrClosed, "ErrCorrupt": snapshot.ErrCorrupt,
			"ErrReadOnly": snapshot.ErrReadOnly, "ErrSlotLost": snapshot.ErrSlotLost,
			"ErrOutcomeUnknown": snapshot.ErrOutcomeUnknown, "ErrPartitionCount": snapshot.ErrPartitionCount, "ErrNotCurrent": snapshot.ErrNotCurrent,
			"ErrPartitionKey": snapshot.ErrPartitionKey, "ErrTableRequired": snapshot.ErrTableRequired,
			"ErrTableNotFound": snapshot.ErrTableNotFound, "ErrTableMissing": snapshot.ErrTableMissing,
			"ErrTableReplaced": snapshot.ErrTableReplaced,
		},
		"adapters": {
			"ErrConnectionNotFound": adapters.ErrConnectionNotFound, "ErrConnectionExists": adapters.ErrConnectionExists,
			"ErrConnectionReadOnly": adapters.ErrConnectionReadOnly, "ErrConnectionInUse": adapters.ErrConnectionInUse,
			"ErrUnknownType": adapters.ErrUnknownType, "ErrAdapterNotFound": adapters.ErrAdapterNotFound,
			"ErrAdapterExists": adapters.ErrAdapterExists, "ErrAdapterReadOnly": adapters.ErrAdapterReadOnly,
			"ErrRunNotFound": adapters.ErrRunNotFound, "ErrRunInProgress": adapters.ErrRunInProgress,
			"ErrBadSchedule": adapters.ErrBadSchedule, "ErrNoKey": adapters.ErrNoKey,
			"ErrResourceNotFound": adapters.ErrResourceNotFound, "ErrBadSelection": adapters.ErrBadSelection, "ErrSourceUnavailable": adapters.ErrSourceUnavailable,
			"ErrSourceAuth": adapters.ErrSourceAuth, "ErrSourcePermission": adapters.ErrSourcePermission, "ErrUnsupportedType": adapters.ErrUnsupportedType,
			"ErrShuttingDown": adapters.ErrShuttingDown, "ErrBadOption": adapters.ErrBadOption,
			"ErrDatasetTaken": adapters.ErrDatasetTaken, "ErrStrategyNotSupported": adapters.ErrStrategyNotSupported,
			"ErrNodeDraining": adapters.ErrNodeDraining, "ErrNodeUnreachable": adapters.ErrNodeUnreachable,
			"ErrNodeFailed":       adapters.ErrNodeFailed,
			"ErrSecretKeyMissing": adapters.ErrSecretKeyMissing, "ErrSecretKeyUnknown": adapters.ErrSecretKeyUnknown,
			"ErrSecretUnreadable": adapters.ErrSecretUnreadable, "ErrTableChanged": adapters.ErrTableChanged,
		},
		"store": {
			"ErrNotFound": store.ErrNotFound, "ErrClosed": store.ErrClosed,
			"ErrInvalidArgument": store.ErrInvalidArgument, "ErrUnavailable": store.ErrUnavailable,
		},
	}
	want := map[error]struct {
		status int
		code   string
	}{
		snapshot.ErrVersionNotKept:     {http.StatusGone, "version_not_kept"},
		snapshot.ErrRowNotFound:        {http.StatusNotFound, "row_not_found"},
		snapshot.ErrBadKey:             {http.StatusBadRequest, "bad_key"},
		snapshot.ErrDuplicateKey:       {http.StatusUnprocessableEntity, "duplicate_key"},
		adapters.ErrBadSchedule:        {http.StatusBadRequest, "bad_schedule"},
		adapters.ErrRunInProgress:      {http.StatusConflict, "run_in_progress"},
		adapters.ErrConnectionNotFound: {http.StatusNotFound, "connection_not_found"},
		store.ErrUnavailable:           {http.StatusServiceUnavailable, "store_unavailable"},
		adapters.ErrDatasetTaken:       {http.StatusConflict, "dataset_taken"},
		snapshot.ErrReadOnly:           {http.StatusConflict, "read_only"},
		snapshot.ErrNotCurrent:         {http.StatusConflict, "not_current"},
		snapshot.ErrSlotLost:           {http.StatusConflict, "writer_slot_lost"},
		snapshot.ErrOutcomeUnknown:     {http.StatusServiceUnavailable, "outcome_unknown"},
		snapshot.ErrTableRequired:      {http.StatusConflict, "table_required"},
		snapshot.ErrTableNotFound:      {http.StatusNotFound, "table_not_found"},
	}
	for pkg, table := range known {
		for _, name := range exportedSentinels(t, filepath.Join("..", pkg)) {
			err, ok := table[name]
			if !ok {
				t.Errorf("%s.%s is not in this test's table: add it here and give it a code in sentinels (problem.go)", pkg, name)
				continue
			}
			// Wrapped, as callers return them.
			p := ProblemFor(fmt.Errorf("doing something: %w", err))
			if err == snapshot.ErrCorrupt {
				// Damaged storage is no input's fault: a 500 with its own code.
				if p.Status != http.StatusInternalServerError || p.Code != "corrupt" {
					t.Errorf("ErrCorrupt = %d %s, want 500 corrupt", p.Status, p.Code)
				}
				continue
			}
			if p.Status == http.StatusInternalServerError || p.Code == "internal" {
				t.Errorf("%s.%s maps to a 500; give it a status and code in sentinels", pkg, name)
			}
			if p.Code == "" || p.Type != problemTypeBase+p.Code || p.Title != http.StatusText(p.Status) {
				t.Errorf("%s.%s: malformed problem %+v", pkg, name, p)
			}
			if w, ok := want[err]; ok && (w.status != p.Status || w.code != p.Code) {
				t.Errorf("%s.%s = %d %s, want %d %s", pkg, name, p.Status, p.Code, w.status, w.code)
			}
		}
	}
}

// TestProblemFor_Shapes pins the code, status and field of each kind of
// error, and that Field comes from, in this order, a field a handler
// attached, an *adapters.OptionError's key and the sentinel's own field.
func TestProblemFor_Shapes(t *testing.T) {
	oe := &adapters.OptionError{Key: "options.port", Msg: "want an integer"}
	cases := []struct {
		name   string
		err    error
		status int
		code   string
		field  string
	}{
		{"option error names the key", fmt.Errorf("creating: %w", oe), 400, "bad_option", "options.port"},
		{"dataset taken names the dataset", fmt.Errorf("creating: %w: %w", &adapters.OptionError{Key: "dataset", Msg: "written by adapter x"}, adapters.ErrDatasetTaken), 409, "dataset_taken", "dataset"},
		{"bad field", BadField("as_of", "bad time"), 400, "bad_request", "as_of"},
		{"bad field wrapped", fmt.Errorf("reading: %w", BadField("limit", "too big")), 400, "bad_request", "limit"},
		{"bad request naming no field", BadField("", "no"), 400, "bad_request", ""},
		{"bad JSON names the body", badJSON("truncated JSON"), 400, "bad_json", "body"},
		{"sentinel with attached field", WithField(fmt.Errorf("x: %w", snapshot.ErrBadKey), "start"), 400, "bad_key", "start"},
		{"sentinel with attached field, wrapped", fmt.Errorf("diff: %w", WithField(snapshot.ErrTagNotFound, "to")), 404, "tag_not_found", "to"},
		{"sentinel without field", fmt.Errorf("x: %w", snapshot.ErrBadKey), 400, "bad_key", ""},
		{"sentinel's own field", fmt.Errorf("x: %w", adapters.ErrBadSchedule), 400, "bad_schedule", "schedule"},
		{"attached field beats the sentinel's", WithField(fmt.Errorf("x: %w", snapshot.ErrBadPageToken), "token"), 400, "bad_page_token", "token"},
		{"attached field beats an option key", WithField(fmt.Errorf("x: %w", oe), "body.options"), 400, "bad_option", "body.options"},
		{"option key beats the sentinel's field", fmt.Errorf("x: %w", optionMarked{oe, adapters.ErrBadSchedule}), 400, "bad_schedule", "options.port"},
		{"no field blames nothing", WithField(snapshot.ErrBadKey, ""), 400, "bad_key", ""},
		{"a field on an unknown error is still internal", WithField(errors.New("boom"), "key"), 500, "internal", ""},
		{"stored JSON that does not decode is internal, not bad_json", fmt.Errorf("decoding run: %w", &json.SyntaxError{Offset: 3}), 500, "internal", ""},
		{"route not found", echo.ErrNotFound, 404, "route_not_found", ""},
		{"method not allowed", echo.ErrMethodNotAllowed, 405, "method_not_allowed", ""},
		{"deadline", fmt.Errorf("reading: %w", context.DeadlineExceeded), 504, "timeout", ""},
		{"unknown error hides its text", errors.New("secret dsn root:hunter2@tcp"), 500, "internal", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ProblemFor(c.err)
			if p.Status != c.status || p.Code != c.code || p.Field != c.field {
				t.Fatalf("got %d %s field %q, want %d %s field %q (%+v)", p.Status, p.Code, p.Field, c.status, c.code, c.field, p)
			}
			if strings.Contains(p.Detail, "hunter2") {
				t.Fatalf("detail leaks the error text: %q", p.Detail)
			}
		})
	}
}

// optionMarked is an *adapters.OptionError that is also another sentinel,
// as adapters builds a bad schedule.
type optionMarked struct {
	oe       *adapters.OptionError
	sentinel error
}

func (e optionMarked) Error() string   { return e.oe.Error() }
func (e optionMarked) Unwrap() []error { return []error{e.oe, e.sentinel} }

// TestSentinelCodesStable pins the codes clients may depend on: a change
// here is an API change (docs/api.md lists the codes).
func TestSentinelCodesStable(t *testing.T) {
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sentinels {
		if !strings.Contains(string(doc), "`"+s.code+"`") {
			t.Errorf("code %q (%v) is not listed in docs/api.md", s.code, s.err)
		}
	}
	for status, code := range httpCodes {
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("code %q (status %d) is not listed in docs/api.md", code, status)
		}
	}
}
