// Command cogserver serves the reference engines over Cog's HTTP protocol,
// one model per generation endpoint under /{kind}/{vendor}/{model}, so that
// endpoints routed to a "cog" provider run end to end on one machine. See
// docs/cogserver.md.
//
//	go run ./cmd/cogserver [-port 5050] [-webhook-token T] [-concurrency 1]
//	                       [-upload-url http://127.0.0.1:5050/uploads/ | -report-paths]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"genjobs/internal/catalog"
	"genjobs/internal/cogserver"
	"genjobs/internal/engine/reference"
	"genjobs/internal/fetch"
	"genjobs/internal/netguard"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cogserver:", err)
		os.Exit(1)
	}
}

func run() error {
	port := flag.Int("port", 5050, "the TCP `port` to listen on")
	host := flag.String("host", "127.0.0.1", "the `address` to listen on")
	token := flag.String("webhook-token", "", "sent as Authorization: Bearer on every webhook (default $WEBHOOK_AUTH_TOKEN)")
	concurrency := flag.Int("concurrency", cogserver.DefaultConcurrency, "predictions each model runs at once; one more is answered 409")
	uploadURL := flag.String("upload-url", "", "upload each output with PUT to this `URL`/{file} and answer its URL instead of a data: URI (Cog's --upload-url); the server's own http://HOST:PORT/uploads/ keeps files an hour")
	reportPaths := flag.Bool("report-paths", false, "without -upload-url, report each output as its file's path on this server's disk, as Cog's Python server (0.10 to 0.16) does without --upload-url")
	allowPrivate := flag.Bool("allow-private", true, "let inputs and webhooks reach loopback and private addresses (the local stack listens on 127.0.0.1)")
	flag.Parse()
	if *token == "" {
		*token = os.Getenv("WEBHOOK_AUTH_TOKEN") // read here: flag's help would print a default
	}
	if *port < 1 || *port > 65535 {
		return fmt.Errorf("-port must be in 1..65535, not %d", *port)
	}

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cat, err := catalog.New()
	if err != nil {
		return err
	}
	guard := &netguard.Guard{AllowPrivate: *allowPrivate}
	srv, err := cogserver.New(cogserver.Options{
		Catalog:      cat,
		Engines:      reference.Engines(),
		Inputs:       fetch.New(guard),
		Webhooks:     &http.Client{Transport: guard.Transport(), Timeout: 2 * time.Minute},
		WebhookToken: *token,
		UploadURL:    *uploadURL,
		ReportPaths:  *reportPaths,
		Concurrency:  *concurrency,
		Log:          log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("port %d is taken (choose another with -port): %w", *port, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	fmt.Printf("Cog model server on http://%s; a route's base_url is http://%s/{kind}/{vendor}/{model} (GET / lists them)\n", addr, addr)
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
