package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// datasetOut renders a dataset with human-readable durations and, when the
// request selected a version, that version.
type datasetOut struct {
	snapshot.DatasetInfo
	Retention   api.Retention         `json:"retention"`
	VersionRead *snapshot.VersionInfo `json:"version_read,omitempty"`
}

func toDatasetOut(d snapshot.DatasetInfo) datasetOut {
	return datasetOut{DatasetInfo: d, Retention: api.Retention{TTL: api.Duration(d.Retention.TTL), MinVersions: d.Retention.MinVersions}}
}

// listDatasets answers GET /v1/datasets: those in the token's grant.
func (s *Server) listDatasets(c echo.Context) error {
	infos, err := s.db.Datasets(c.Request().Context())
	if err != nil {
		return err
	}
	infos = FilterGranted(grantOf(c), infos, func(d snapshot.DatasetInfo) string { return d.Name })
	out := make([]datasetOut, 0, len(infos))
	for _, d := range infos {
		out = append(out, toDatasetOut(d))
	}
	return answerList(c, "datasets", out)
}

// getDataset answers GET /v1/datasets/{dataset}: the dataset and, with a
// version selector, the version it selects as version_read.
func (s *Server) getDataset(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	at, err := parseAt(c)
	if err != nil {
		return err
	}
	d, err := s.db.Dataset(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	out := toDatasetOut(d)
	if at != (snapshot.At{}) {
		// A version selector: resolve it (410 when not kept) and describe
		// that version, schema and key columns included, as "version_read".
		v, err := s.db.VersionAt(c.Request().Context(), ds, at)
		if err != nil {
			return err
		}
		setVersionHeader(c, v.Version)
		out.VersionRead = &v
		return c.JSON(http.StatusOK, out)
	}
	if d.Current != 0 {
		setVersionHeader(c, d.Current)
	}
	return c.JSON(http.StatusOK, out)
}

// dropDataset answers DELETE /v1/datasets/{dataset}: the dataset and all
// its versions go.
func (s *Server) dropDataset(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	if err := s.db.DropDataset(c.Request().Context(), ds); err != nil {
		return err
	}
	s.log.Info("dataset dropped", "dataset", ds, TokenAttr(c.Get("token")))
	return c.NoContent(http.StatusNoContent)
}
