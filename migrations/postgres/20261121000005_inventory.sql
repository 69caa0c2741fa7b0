-- Fleet inventory: what the last successful sync of each cluster read from its API, the
-- findings of the audit checks on it, and when each image was first and last seen per
-- cluster. A sync replaces a cluster's rows in one transaction; history rows stay.

-- The last sync attempt per cluster.
CREATE TABLE inventory_syncs (
    cluster_id   UUID PRIMARY KEY NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    attempted_at TIMESTAMPTZ NOT NULL,
    synced_at    TIMESTAMPTZ,
    error        TEXT,
    api_version  TEXT,
    metrics      BOOLEAN NOT NULL DEFAULT FALSE,
    duration_ms  BIGINT NOT NULL DEFAULT 0
);

-- CPU in millicores, memory in bytes; *_used only when metrics.k8s.io answered.
CREATE TABLE inventory_nodes (
    cluster_id        UUID NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    ready             BOOLEAN NOT NULL,
    problems          TEXT NOT NULL,
    kubelet_version   TEXT NOT NULL,
    container_runtime TEXT NOT NULL,
    os_image          TEXT NOT NULL,
    kernel_version    TEXT NOT NULL,
    architecture      TEXT NOT NULL,
    cpu_capacity      BIGINT NOT NULL,
    mem_capacity      BIGINT NOT NULL,
    cpu_allocatable   BIGINT NOT NULL,
    mem_allocatable   BIGINT NOT NULL,
    cpu_requested     BIGINT NOT NULL,
    mem_requested     BIGINT NOT NULL,
    cpu_used          BIGINT,
    mem_used          BIGINT,
    pods              INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, name)
);

CREATE TABLE inventory_workloads (
    cluster_id UUID NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    namespace  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    desired    INTEGER NOT NULL,
    ready      INTEGER NOT NULL,
    state      TEXT NOT NULL,
    PRIMARY KEY (cluster_id, namespace, kind, name)
);

CREATE TABLE inventory_pods (
    cluster_id    UUID NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    namespace     TEXT NOT NULL,
    name          TEXT NOT NULL,
    phase         TEXT NOT NULL,
    node          TEXT,
    restarts      INTEGER NOT NULL,
    workload_kind TEXT NOT NULL,
    workload_name TEXT NOT NULL,
    cpu_requests  BIGINT NOT NULL,
    mem_requests  BIGINT NOT NULL,
    cpu_limits    BIGINT NOT NULL,
    mem_limits    BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, namespace, name)
);

-- One row per workload container and image (replicas collapse into `pods`). `image` is the
-- normalised reference (registry/repository[:tag][@digest]) or, when it does not parse, the
-- text of the pod spec.
CREATE TABLE inventory_containers (
    cluster_id    UUID NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    namespace     TEXT NOT NULL,
    workload_kind TEXT NOT NULL,
    workload_name TEXT NOT NULL,
    container     TEXT NOT NULL,
    image         TEXT NOT NULL,
    init          BOOLEAN NOT NULL,
    privileged    BOOLEAN NOT NULL,
    host_path     BOOLEAN NOT NULL,
    pods          INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, namespace, workload_kind, workload_name, container, image)
);
CREATE INDEX inventory_containers_by_image ON inventory_containers (image);

-- Since when a cluster runs an image: kept after the image is gone (present = FALSE).
CREATE TABLE image_history (
    cluster_id UUID NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    image      TEXT NOT NULL,
    first_seen TIMESTAMPTZ NOT NULL,
    last_seen  TIMESTAMPTZ NOT NULL,
    present    BOOLEAN NOT NULL,
    PRIMARY KEY (cluster_id, image)
);
CREATE INDEX image_history_present ON image_history (present, image);

CREATE TABLE inventory_findings (
    cluster_id UUID NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    check_id   TEXT NOT NULL,
    severity   TEXT NOT NULL CHECK (severity IN ('high', 'medium', 'low')),
    subject    TEXT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (cluster_id, seq)
);
CREATE INDEX inventory_findings_by_severity ON inventory_findings (severity, check_id);
