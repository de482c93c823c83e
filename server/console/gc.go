package console

import (
	"net/http"

	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// The GC page: each dataset's retention and kept versions, a dry run that
// shows what would go, then the collection itself.

// gcItem is one dataset of the GC page, with the report of the request
// that asked for one.
type gcItem struct {
	Info   snapshot.DatasetInfo
	Report *snapshot.GCReport
}

// gcPage answers GET /ui/gc.
func (c *console) gcPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.renderGC(w, r, v, "", nil)
}

// renderGC renders the GC page, with rep shown beside dataset ds.
func (c *console) renderGC(w http.ResponseWriter, r *http.Request, v viewer, ds string, rep *snapshot.GCReport) error {
	infos, err := c.s.db.Datasets(r.Context())
	if err != nil {
		return err
	}
	infos = server.FilterGranted(v.Grant, infos, func(d snapshot.DatasetInfo) string { return d.Name })
	items := make([]gcItem, 0, len(infos))
	for _, d := range infos {
		it := gcItem{Info: d}
		if d.Name == ds {
			it.Report = rep
		}
		items = append(items, it)
	}
	return c.render(w, r, http.StatusOK, "gc", v, items)
}

// gc answers POST /ui/gc/{dataset} (form: dry_run), as POST
// /v1/datasets/{dataset}/gc does: the report as a fragment for htmx, or
// the GC page with it.
func (c *console) gc(w http.ResponseWriter, r *http.Request, v viewer) error {
	ds := r.PathValue("dataset")
	dry := r.PostFormValue("dry_run") == "true"
	rep, err := c.s.db.GC(r.Context(), ds, dry)
	if err != nil {
		return err
	}
	if !dry {
		c.s.RecordGC(ds, rep, false, v.Name)
	}
	if r.Header.Get("HX-Request") != "" {
		return c.fragment(w, http.StatusOK, "gc", "report-fragment", v, gcItem{Info: snapshot.DatasetInfo{Name: ds}, Report: &rep})
	}
	return c.renderGC(w, r, v, ds, &rep)
}
