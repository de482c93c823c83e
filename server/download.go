package server

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

// Downloads of the console: a file of rows or of a diff is exactly what
// the API serves, by the API's own handler over a plain request whose
// role and grant the caller checked (the browser's session stands for the
// bearer token the API would ask for). Refusals are the API's
// problem+json answers.

// ServeRows answers r as GET /v1/datasets/{dataset}/rows does.
func (s *Server) ServeRows(w http.ResponseWriter, r *http.Request, dataset string) {
	s.serveOperation(w, r, dataset, s.scanRows)
}

// ServeDiff answers r as GET /v1/datasets/{dataset}/diff does.
func (s *Server) ServeDiff(w http.ResponseWriter, r *http.Request, dataset string) {
	s.serveOperation(w, r, dataset, s.diff)
}

// serveOperation runs the API handler h of a dataset's operation on r; a
// query parameter table= names a table of a dataset of several tables,
// given to h as the API's {table}.
func (s *Server) serveOperation(w http.ResponseWriter, r *http.Request, dataset string, h echo.HandlerFunc) {
	ec := s.echo.NewContext(r, w)
	names, values := []string{"dataset"}, []string{dataset}
	if t := r.URL.Query().Get("table"); t != "" {
		// escaped as pathParam reads a raw path's parameter
		if r.URL.RawPath != "" {
			t = url.PathEscape(t)
		}
		names, values = append(names, "table"), append(values, t)
	}
	ec.SetParamNames(names...)
	ec.SetParamValues(values...)
	if err := h(ec); err != nil {
		s.echo.HTTPErrorHandler(err, ec)
	}
}
