// Package deploy holds no code: the image, Compose, Kubernetes and Slurm files that deploy fabriclab
// are beside it. Its test keeps every network the repository makes or describes (Compose networks,
// cluster files, suites, examples, docs) in 198.18.0.0/15, the range RFC 2544 reserves for
// benchmarking, and out of the private ranges, which are someone's LAN.
package deploy
