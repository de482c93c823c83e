package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// CollectGarbage runs garbage collection (snapshot.DB.GC, not dry) on every
// dataset, one after the other, and returns the reports of those it
// collected: the work of one tick of the periodic GC (package daemon runs
// the loop). A dataset dropped meanwhile is skipped; other errors are
// joined and the remaining datasets still collected. Bytes and cells
// reclaimed are added to the gc metrics. In a cluster it collects only
// the datasets this node owns (Cluster.Owns), so that each dataset is
// collected by one node. A read-only process (a reader of a store another
// process writes, snapshot.Options ReadOnly) should not call it: GC is
// the writer's job.
func (s *Server) CollectGarbage(ctx context.Context) ([]snapshot.GCReport, error) {
	infos, err := s.db.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	var reps []snapshot.GCReport
	var errs []error
	for _, d := range infos {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if s.cluster != nil && !s.cluster.Owns(d.Name) {
			continue // another node of the cluster collects it
		}
		rep, err := s.db.GC(ctx, d.Name, false)
		switch {
		case errors.Is(err, snapshot.ErrDatasetNotFound):
			continue
		case err != nil:
			s.log.Warn("garbage collection", "dataset", d.Name, "err", err)
			errs = append(errs, err)
			continue
		}
		s.recordGC(d.Name, rep, true, nil)
		reps = append(reps, rep)
	}
	return reps, errors.Join(errs...)
}

// gc answers POST /v1/datasets/{dataset}/gc: collects the dataset now;
// dry_run=true only reports what it would collect.
func (s *Server) gc(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	dry, err := parseBoolQuery(c, "dry_run")
	if err != nil {
		return err
	}
	rep, err := s.db.GC(c.Request().Context(), ds, dry)
	if err != nil {
		return err
	}
	if !dry {
		s.recordGC(ds, rep, false, c.Get("token"))
	}
	if rep.VersionsExpired == nil {
		rep.VersionsExpired = []int64{}
	}
	return c.JSON(http.StatusOK, rep)
}

// recordGC adds what a collection of ds reclaimed to the gc metrics and
// logs it at info: a periodic one only when it collected something, so that
// an idle loop stays quiet; one asked for through the API always, with the
// name of the token that asked.
func (s *Server) recordGC(ds string, rep snapshot.GCReport, periodic bool, token any) {
	s.metrics.gcBytes.WithLabelValues(ds).Add(float64(rep.BytesReclaimed))
	s.metrics.gcCells.WithLabelValues(ds).Add(float64(rep.CellsDeleted))
	if periodic && rep.CellsDeleted == 0 && len(rep.VersionsExpired) == 0 && rep.InvalidTxnsPruned == 0 {
		return
	}
	attrs := []any{"dataset", ds, "versions_expired", len(rep.VersionsExpired), "cells_deleted", rep.CellsDeleted,
		"bytes_reclaimed", rep.BytesReclaimed, "invalid_txns_pruned", rep.InvalidTxnsPruned}
	if !periodic {
		attrs = append(attrs, tokenAttr(token))
	}
	s.log.Info("garbage collected", attrs...)
}
