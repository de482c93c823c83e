package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// serveTrivial serves one trivial echo route, GET /trivial/:id, answering
// a small JSON object, on a loopback port until ctx ends, and returns its
// address. It is the baseline of the HTTP figures (point reads against a
// trivial echo handler built by the same Go toolchain on the same
// machine), so that the ratio measures snapstore's read path and not
// echo, Go's net/http or the machine.
func serveTrivial(ctx context.Context) string {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/trivial/:id", func(c echo.Context) error {
		return c.JSONBlob(http.StatusOK, []byte(`{"dataset":"trivial","version":1,"key":["`+c.Param("id")+`"],"row":{}}`+"\n"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); hs.Close() }()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("bench: trivial handler: %v", err)
		}
	}()
	return ln.Addr().String()
}
