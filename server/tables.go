package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// A dataset of named tables (snapshot.TableInfo) is read through the
// table-qualified routes, /v1/datasets/{dataset}/tables/{table}/...: the
// handlers of the dataset's rows, point reads and diffs, which read the
// {table} path parameter when the route has one (tableParam). The
// dataset's own routes read a dataset of one table and answer 409
// table_required, naming the tables, for one of several.

// tablesOut is the answer of GET /v1/datasets/{dataset}/tables.
type tablesOut struct {
	Dataset string               `json:"dataset"`
	Version int64                `json:"version"`
	Tables  []snapshot.TableInfo `json:"tables"`
}

// listTables answers GET /v1/datasets/{dataset}/tables: the tables of
// the selected version with their stats and schema, by name; none for a
// dataset of one table, which the dataset's routes read.
func (s *Server) listTables(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	at, err := parseAt(c)
	if err != nil {
		return err
	}
	vi, err := s.db.VersionAt(c.Request().Context(), ds, at)
	if err != nil {
		return err
	}
	setVersionHeader(c, vi.Version)
	out := tablesOut{Dataset: vi.Dataset, Version: vi.Version, Tables: vi.Tables}
	if out.Tables == nil {
		out.Tables = []snapshot.TableInfo{}
	}
	return c.JSON(http.StatusOK, out)
}

// tableParam returns the {table} path parameter, and whether the route
// has one (a table-qualified route).
func tableParam(c echo.Context) (table string, named bool, err error) {
	for _, n := range c.ParamNames() {
		if n == "table" {
			table, err = pathParam(c, "table")
			return table, true, err
		}
	}
	return "", false, nil
}

// ReaderOf pins the version at of ds: of its table table when named,
// else of the dataset (snapshot.ErrTableRequired for one of several
// tables).
func (s *Server) ReaderOf(ctx context.Context, ds, table string, named bool, at snapshot.At) (*snapshot.Reader, error) {
	if named {
		return s.db.TableReader(ctx, ds, table, at)
	}
	return s.db.Reader(ctx, ds, at)
}

// tablesDiffOut is the stats_only answer of a dataset's diff when the
// dataset holds named tables: the sums, then each table's counts.
type tablesDiffOut struct {
	snapshot.DiffStats
	Tables []snapshot.TableDiffStats `json:"tables"`
}

// diffCounts answers the counts of a diff: of the table when named; of
// the dataset otherwise, with each of its tables' counts when it holds
// named tables.
func (s *Server) diffCounts(c echo.Context, ds, table string, named bool, from, to int64) error {
	ctx := c.Request().Context()
	if named {
		st, err := s.db.TableDiffCounts(ctx, ds, table, from, to)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, st)
	}
	ts, err := s.db.DiffTables(ctx, ds, from, to)
	if err != nil {
		return err
	}
	if len(ts) == 1 && ts[0].Table == "" {
		return c.JSON(http.StatusOK, ts[0].DiffStats)
	}
	out := tablesDiffOut{DiffStats: snapshot.DiffStats{From: from, To: to}, Tables: ts}
	for _, t := range ts {
		out.Inserted += t.Inserted
		out.Updated += t.Updated
		out.Deleted += t.Deleted
	}
	return c.JSON(http.StatusOK, out)
}

// fileName is the name of a downloaded file of the dataset ds, or of
// its table: the table's name with what a file name or its quoting
// cannot hold replaced by '_'.
func fileName(ds, table string) string {
	if table == "" {
		return ds
	}
	return ds + "-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, table)
}
