// Package deploy holds Sluice's deployment files: the container images
// (Dockerfile, Dockerfile.prebuilt), a Docker Compose fleet (compose.yaml,
// with Redis, the fake provider, nginx, Prometheus and Grafana) and
// Kubernetes manifests (k8s/). It has no code; deploy_test.go checks
// that the files agree with each other and with package config.
// See README.md in this directory.
package deploy
