#!/bin/sh
# The installer the browser tests give to a `command` provider: it pretends to build a cluster
# in two phases (pausing PAUSE seconds in each) and hands over the kubeconfig of the fake
# Kubernetes API server.   install.sh KUBECONFIG_FILE PAUSE
set -eu
echo "::step Preparing ${KQ_PARAM_NODE_COUNT:-1} machines for $KQ_CLUSTER_NAME"
echo "::progress 10"
sleep "$2"
echo "machines ready"
echo "::step Installing Kubernetes"
echo "::progress 60"
sleep "$2"
cp "$1" "$KQ_KUBECONFIG"
echo "::progress 95"
