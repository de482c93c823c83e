package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// Versions lists are pages: limit versions (default defaultVersionsListed,
// at most maxVersionsListed), newest first, and a next_page_token while
// older ones remain.
const (
	defaultVersionsListed = 100
	maxVersionsListed     = 1000
)

// listVersions answers GET /v1/datasets/{dataset}/versions: a page of
// the kept versions, newest first.
func (s *Server) listVersions(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	limit, err := parseLimit(c, maxVersionsListed)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = defaultVersionsListed
	}
	var before int64
	if tok := c.QueryParam("page_token"); tok != "" {
		if before, err = decodeVersionsToken(ds, tok); err != nil {
			return err
		}
	}
	vs, more, err := s.db.VersionsPage(c.Request().Context(), ds, before, limit)
	if err != nil {
		return err
	}
	out := versionsPage{Versions: make([]versionListed, len(vs))}
	for i, vi := range vs {
		out.Versions[i] = versionListed{VersionInfo: vi}
		for _, t := range vi.Tables {
			out.Versions[i].Tables = append(out.Versions[i].Tables, tableListed{Name: t.Name, Number: t.Number, Stats: t.Stats, Partitions: t.Partitions})
		}
	}
	if more {
		out.NextPageToken = encodeVersionsToken(ds, vs[len(vs)-1].Version)
	}
	return c.JSON(http.StatusOK, out)
}

// versionsPage is the answer of GET /v1/datasets/{dataset}/versions.
type versionsPage struct {
	Versions      []versionListed `json:"versions"`
	NextPageToken string          `json:"next_page_token,omitempty"`
}

// versionListed is a version in a versions list: the tables of a dataset
// of several tables without their schemas, which a page of many versions
// of many tables would repeat (GET .../versions/{version} and
// GET .../tables give them).
type versionListed struct {
	snapshot.VersionInfo
	Tables []tableListed `json:"tables,omitempty"`
}

// tableListed is a table of a version in a versions list.
type tableListed struct {
	Name       string            `json:"name"`
	Number     int               `json:"number"`
	Stats      snapshot.RunStats `json:"stats"`
	Partitions int               `json:"partitions"`
}

// A versions page token holds the dataset and the version the next page
// starts below: base64url of 'v', the version (uvarint), the dataset.
// Naming the dataset lets a token given to another dataset be refused
// rather than read as a position there.

func encodeVersionsToken(dataset string, before int64) string {
	b := binary.AppendUvarint([]byte{'v'}, uint64(before))
	return base64.RawURLEncoding.EncodeToString(append(b, dataset...))
}

// decodeVersionsToken returns the version a versions page token starts
// below; snapshot.ErrBadPageToken for a mangled token or one of another
// dataset.
func decodeVersionsToken(dataset, tok string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil && len(b) > 1 && b[0] == 'v' {
		v, n := binary.Uvarint(b[1:])
		if n > 0 && v > 0 && v <= math.MaxInt64 {
			if string(b[1+n:]) == dataset {
				return int64(v), nil
			}
			return 0, fmt.Errorf("%w: the token lists the versions of another dataset", snapshot.ErrBadPageToken)
		}
	}
	return 0, fmt.Errorf("%w: not a token of a versions list", snapshot.ErrBadPageToken)
}

// getVersion answers GET /v1/datasets/{dataset}/versions/{version}.
func (s *Server) getVersion(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	raw, err := pathParam(c, "version")
	if err != nil {
		return err
	}
	v, err := ParseVersion("version", raw)
	if err != nil {
		return err
	}
	info, err := s.db.VersionInfo(c.Request().Context(), ds, v)
	if err != nil {
		return err
	}
	setVersionHeader(c, info.Version)
	return c.JSON(http.StatusOK, info)
}

// rollback answers POST /v1/datasets/{dataset}/rollback: commits a new
// version with a kept version's content (snapshot.D11) and answers it.
func (s *Server) rollback(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	var ref versionRef
	if err := decodeBody(c, &ref, true); err != nil {
		return err
	}
	if ref.Version < 1 {
		return BadField("body.version", "want the positive version to roll back to")
	}
	info, err := s.db.Rollback(c.Request().Context(), ds, ref.Version)
	if err != nil {
		return err
	}
	s.log.Info("dataset rolled back", "dataset", ds, "version", info.Version, "restored_from", info.RestoredFrom, TokenAttr(c.Get("token")))
	return c.JSON(http.StatusOK, info)
}

// currentVersion returns the current version of ds, for a request that
// defaults to it; snapshot.ErrNoVersion, wrapped with what the request does
// ("tagging"), when nothing was committed.
func (s *Server) currentVersion(ctx context.Context, ds, what string) (int64, error) {
	d, err := s.db.Dataset(ctx, ds)
	if err != nil {
		return 0, err
	}
	if d.Current == 0 {
		return 0, fmt.Errorf("server: %s %q: %w", what, ds, snapshot.ErrNoVersion)
	}
	return d.Current, nil
}

// versionRef is the body of tag and rollback requests.
type versionRef struct {
	Version int64 `json:"version"`
}
