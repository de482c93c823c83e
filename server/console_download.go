package server

import (
	"net/http"

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
		ec.SetParamNames("dataset")
		ec.SetParamValues(r.PathValue("dataset"))
		if err := api(ec); err != nil {
			c.s.echo.HTTPErrorHandler(err, ec)
		}
		return nil
	}
}
