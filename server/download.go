package server

import (
	"net/http"

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

// serveOperation runs the API handler h of a dataset's operation on r.
func (s *Server) serveOperation(w http.ResponseWriter, r *http.Request, dataset string, h echo.HandlerFunc) {
	ec := s.echo.NewContext(r, w)
	ec.SetParamNames("dataset")
	ec.SetParamValues(dataset)
	if err := h(ec); err != nil {
		s.echo.HTTPErrorHandler(err, ec)
	}
}
