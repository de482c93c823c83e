package console

import (
	"net/http"
)

// download answers a console download (GET /ui/datasets/{dataset}/rows/download
// and .../diff/download, format=parquet or arrow) with serve, the
// server's answer of the API operation (Server.ServeRows, ServeDiff), so
// the file is exactly what the API serves.
func (c *console) download(serve func(http.ResponseWriter, *http.Request, string)) consoleHandler {
	return func(w http.ResponseWriter, r *http.Request, _ viewer) error {
		serve(w, r, r.PathValue("dataset"))
		return nil
	}
}
