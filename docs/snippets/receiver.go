// A Hookline receiver in Go (standard library only): Standard Webhooks verification with crypto/hmac.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

var secrets = strings.Fields(os.Getenv("HOOKLINE_SIGNING_SECRET")) // during a rotation: new and old

func verified(header http.Header, raw []byte) bool {
	id, timestamp := header.Get("webhook-id"), header.Get("webhook-timestamp")
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if id == "" || err != nil || math.Abs(float64(time.Now().Unix()-seconds)) > 300 {
		return false
	}
	for _, secret := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			continue
		}
		mac := hmac.New(sha256.New, key)
		fmt.Fprintf(mac, "%s.%s.%s", id, timestamp, raw)
		expected := mac.Sum(nil)
		for _, signature := range strings.Fields(header.Get("webhook-signature")) {
			version, value, _ := strings.Cut(signature, ",")
			given, err := base64.StdEncoding.DecodeString(value)
			if version == "v1" && err == nil && hmac.Equal(given, expected) {
				return true
			}
		}
	}
	return false
}

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8000"
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body) // the exact bytes signed
		if !verified(r.Header, raw) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Println("verified", r.Header.Get("webhook-id"), string(raw)) // de-duplicate on webhook-id
		w.WriteHeader(http.StatusNoContent)
	})
	if err := http.ListenAndServe("127.0.0.1:"+port, nil); err != nil {
		panic(err)
	}
}
