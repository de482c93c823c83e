package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/server"
)

// cmdTrivialHTTP serves one trivial echo route, GET /trivial/:id, answering
// a small JSON object. It is the baseline of `make bench`'s HTTP figures
// (point reads against a trivial echo handler in the same binary on the
// same machine), so that the ratio measures snapstore's read path and not
// echo, Go's net/http or the machine. Hidden from the usage text; loopback
// only.
func cmdTrivialHTTP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trivial-http", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on")
	if err := fs.Parse(args); err != nil {
		return usageError("%v", err)
	}
	if err := server.CheckListen(*listen, nil); err != nil {
		return err
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/trivial/:id", func(c echo.Context) error {
		return c.JSONBlob(http.StatusOK, []byte(`{"dataset":"trivial","version":1,"key":["`+c.Param("id")+`"],"row":{}}`+"\n"))
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); hs.Close() }()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
