package server

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

// download answers a console download (GET /ui/datasets/{dataset}/rows/download
// and .../diff/download, format=parquet or arrow) with the API's own
// handler, api, so the file is exactly what the API serves; the console's
// session stands for the bearer token the API would ask for. Its refusals
// are the API's problem+json answers.
func (c *console) download(api echo.HandlerFunc) consoleHandler {
	return func(w http.ResponseWriter, r *http.Request, _ viewer) error {
		ec := c.s.echo.NewContext(r, w)
		names, values := []string{"dataset"}, []string{r.PathValue("dataset")}
		if t := r.URL.Query().Get("table"); t != "" {
			// a table of a dataset of several tables: the API's {table},
			// escaped as pathParam reads it
			if r.URL.RawPath != "" {
				t = url.PathEscape(t)
			}
			names, values = append(names, "table"), append(values, t)
		}
		ec.SetParamNames(names...)
		ec.SetParamValues(values...)
		if err := api(ec); err != nil {
			c.s.echo.HTTPErrorHandler(err, ec)
		}
		return nil
	}
}
