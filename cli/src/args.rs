//! The client commands' arguments (they join the server's own commands in `kqueen`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::output::Format;

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Log in to a portal and save its URL and a personal API token for the commands below.
    ///
    /// On a terminal, with a portal whose identity provider offers a device login, this shows
    /// a page and a code: sign in there and the portal issues this machine a token. Otherwise
    /// give a token made on the portal's Tokens page: it is read from standard input, or
    /// prompted for without echo.
    Login(LoginArgs),
    /// Forget the saved token and every cached cluster credential.
    Logout,
    /// Show whom the saved token belongs to.
    Whoami(OutputArgs),
    /// Request, list, show, scale, upgrade and delete clusters; replace their dead nodes.
    #[command(subcommand)]
    Clusters(ClustersCommand),
    /// Add a cluster's context to your kubeconfig (and make it the current one).
    Kubeconfig(KubeconfigArgs),
    /// kubectl's credential plugin: print an ExecCredential for a cluster.
    ///
    /// `kubeconfig --exec` writes contexts that run it. The token is cached until a minute
    /// before it expires and fetched from the portal again then, or when kubectl asks twice.
    GetToken(GetTokenArgs),
    /// Applications deployed on a cluster.
    #[command(subcommand)]
    Apps(AppsCommand),
    /// The addon catalog and a cluster's addons.
    #[command(subcommand)]
    Addons(AddonsCommand),
    /// The whole fleet (operators): images, Kubernetes versions, findings.
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Production clusters and their requests for a second person's approval.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Upgrades in waves: one Kubernetes version brought to many clusters, a few at a time
    /// (operators across the fleet, tenant admins across their tenant).
    #[command(subcommand)]
    Rollouts(RolloutsCommand),
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// How to print the answer: a table for people, or the API's JSON or YAML.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The portal's URL, such as https://kqueen.example.com.
    pub url: String,
    /// Read the token from standard input without prompting (for scripts).
    #[arg(long, conflicts_with = "sso")]
    pub token_stdin: bool,
    /// Sign in at the identity provider (its device login), even without a terminal.
    #[arg(long)]
    pub sso: bool,
    /// Days the token a device login issues stays valid (1 to 90).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=90))]
    pub days: u32,
}

/// A cluster: its UUID, `tenant/name`, or its name when no other visible cluster has it.
#[derive(Debug, Args)]
pub struct ClusterArg {
    #[arg(value_name = "CLUSTER")]
    pub cluster: String,
}

#[derive(Debug, Subcommand)]
pub enum ClustersCommand {
    /// Clusters you may see (operators: all).
    List {
        #[arg(long)]
        tenant: Option<String>,
        /// provisioning, ready, updating, deleting, error or unknown.
        #[arg(long)]
        state: Option<String>,
        /// Part of the name.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// A cluster with its operations.
    Get {
        #[command(flatten)]
        cluster: ClusterArg,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Request a cluster from a template.
    Create {
        /// The cluster's name (a DNS label such as `dev`).
        name: String,
        #[arg(long)]
        template: String,
        /// The tenant; may be left out when you are in one tenant only.
        #[arg(long)]
        tenant: Option<String>,
        /// A template parameter, `key=value`; `key=@file` reads the value from a file.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
        /// Wait until the cluster is Ready (or failed), showing progress on standard error.
        #[arg(long)]
        wait: bool,
        /// How long --wait waits, in minutes (at most a day).
        #[arg(long, default_value_t = 60, value_name = "MINUTES",
            value_parser = clap::value_parser!(u64).range(1..=1440))]
        timeout: u64,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Delete a cluster (and what its provisioner made).
    Delete {
        #[command(flatten)]
        cluster: ClusterArg,
        /// Confirm: deleting cannot be undone.
        #[arg(long)]
        yes: bool,
    },
    /// Ask the provisioner for a number of nodes.
    Scale {
        #[command(flatten)]
        cluster: ClusterArg,
        #[arg(long)]
        nodes: u32,
    },
    /// Ask the provisioner for a Kubernetes version.
    Upgrade {
        #[command(flatten)]
        cluster: ClusterArg,
        /// Such as 1.34 or v1.34.2.
        #[arg(long)]
        version: String,
    },
    /// Replace the machine of a node that is not Ready (tenant admins and operators, on
    /// providers that can): KQueen removes the node from the cluster, then the provisioner
    /// brings a new machine.
    ReplaceNode {
        #[command(flatten)]
        cluster: ClusterArg,
        /// The node's name, as `kubectl get nodes` shows it.
        #[arg(value_name = "NODE")]
        node: String,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Show a cluster's autoscaling; with --min and --max turn it on or change it (tenant
    /// admins and operators, on providers that can scale); --off turns it off.
    Autoscale(AutoscaleArgs),
}

#[derive(Debug, Args)]
pub struct AutoscaleArgs {
    #[command(flatten)]
    pub cluster: ClusterArg,
    /// Never fewer worker nodes than this.
    #[arg(long)]
    pub min: Option<u32>,
    /// Never more worker nodes than this (the tenant's node quota caps it too).
    #[arg(long)]
    pub max: Option<u32>,
    /// A node whose pods request less than this percentage of its CPU and memory is
    /// underused (default 50).
    #[arg(long, value_name = "PERCENT")]
    pub utilisation: Option<u32>,
    /// Seconds a node stays underused before it is drained and removed (default 600).
    #[arg(long, value_name = "SECONDS")]
    pub after: Option<u32>,
    /// Turn autoscaling off (the node count stays as it is).
    #[arg(long)]
    pub off: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    #[command(flatten)]
    pub cluster: ClusterArg,
    /// Write a context whose credential kubectl fetches through `kqueen get-token` whenever it
    /// expires, instead of a token that stops working after a few hours.
    #[arg(long)]
    pub exec: bool,
    /// The kubeconfig to update; default: the first file of $KUBECONFIG, else ~/.kube/config.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print the kubeconfig instead of updating a file.
    #[arg(long, conflicts_with = "file")]
    pub print: bool,
    /// Leave the current context as it is.
    #[arg(long)]
    pub no_switch: bool,
}

#[derive(Debug, Args)]
pub struct GetTokenArgs {
    /// The cluster's UUID.
    #[arg(long)]
    pub cluster: String,
    /// The portal the context was written for; refused when you are logged in to another.
    #[arg(long)]
    pub url: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum AppsCommand {
    /// Applications deployed on a cluster.
    List {
        #[command(flatten)]
        cluster: ClusterArg,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Deploy manifests (a YAML file of one or more documents) as an application.
    Deploy {
        #[command(flatten)]
        cluster: ClusterArg,
        /// The application's name (a DNS label).
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "1.0.0")]
        version: String,
        /// Namespace of namespaced objects without one; default: the application's name.
        #[arg(long)]
        namespace: Option<String>,
        /// The manifests; `-` reads standard input.
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: PathBuf,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Remove an application (and the objects it created).
    Delete {
        #[command(flatten)]
        cluster: ClusterArg,
        /// The application's name or UUID.
        app: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AddonsCommand {
    /// The catalog, or with a cluster its addons and their state.
    List {
        #[arg(value_name = "CLUSTER")]
        cluster: Option<String>,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Install (or reconfigure, or upgrade) an addon on a cluster.
    Enable {
        #[command(flatten)]
        cluster: ClusterArg,
        addon: String,
        /// Default: the catalog's newest.
        #[arg(long)]
        version: Option<String>,
        /// An addon parameter, `key=value`.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
    },
    /// Remove an addon from a cluster.
    Disable {
        #[command(flatten)]
        cluster: ClusterArg,
        addon: String,
    },
}

#[derive(Debug, Args)]
pub struct FleetArgs {
    #[arg(long)]
    pub tenant: Option<String>,
    /// Part of a cluster's name.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Part of the image, the version, or a finding's subject or message.
    #[arg(long)]
    pub q: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Every container image in every cluster.
    Images(FleetArgs),
    /// Kubernetes versions of every cluster and node.
    Versions(FleetArgs),
    /// What the fleet's checks found.
    Findings {
        #[command(flatten)]
        filter: FleetArgs,
        /// high, medium or low.
        #[arg(long)]
        severity: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Requests in your tenants (operators: every tenant): waiting ones, or all with --all.
    List {
        /// Decided and expired requests too (the newest 200).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Mark a cluster production: deleting it, restoring over it and unmarking it then wait
    /// for a second operator or tenant admin.
    Protect {
        #[command(flatten)]
        cluster: ClusterArg,
    },
    /// Ask for a second person's approval of an action on a production cluster.
    Request {
        #[command(flatten)]
        cluster: ClusterArg,
        /// delete, restore or unprotect.
        #[arg(long)]
        action: String,
        /// For restore: the backup's UUID.
        #[arg(long)]
        backup: Option<String>,
        /// For restore: only this namespace of the backup (repeat for more).
        #[arg(long = "namespace", value_name = "NAMESPACE")]
        namespaces: Vec<String>,
        /// Why (shown to the approver).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Approve a request (not your own): its action runs at once, as yours.
    Approve {
        /// The request's UUID.
        id: String,
    },
    /// Refuse a request, or withdraw your own.
    Refuse {
        /// The request's UUID.
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

/// A rollout's target, filter and wave size (every filter that is set must match).
#[derive(Debug, Args)]
pub struct RolloutArgs {
    /// The version to upgrade to, such as 1.21 or v1.21.3.
    #[arg(long, value_name = "VERSION")]
    pub target: String,
    /// Only this tenant's clusters (tenant admins name theirs; without it: the whole fleet,
    /// for operators).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Only the clusters of this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// Only the clusters at this version (1.20 takes every 1.20.x).
    #[arg(long)]
    pub version: Option<String>,
    /// Clusters upgraded at a time (1 to 100).
    #[arg(long, default_value_t = 1, value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100))]
    pub wave_size: u32,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// A rollout: its UUID, or the start of it that timelines show (`rollout 0193ab12`).
#[derive(Debug, Args)]
pub struct RolloutArg {
    #[arg(value_name = "ROLLOUT")]
    pub id: String,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum RolloutsCommand {
    /// What a rollout would do: its waves, and the clusters it leaves out with why (nothing
    /// starts).
    Plan(RolloutArgs),
    /// Start a rollout: the first wave's upgrades are queued at once, each next wave when
    /// the one before has ended; the first failure pauses it.
    Start(RolloutArgs),
    /// Rollouts you manage, newest first.
    List {
        #[command(flatten)]
        out: OutputArgs,
    },
    /// A rollout with its clusters, wave by wave.
    Get(RolloutArg),
    /// Pause a running rollout: upgrades under way finish, no new one starts.
    Pause(RolloutArg),
    /// Resume a paused rollout: failed clusters that are Ready again are tried again.
    Resume(RolloutArg),
    /// Abort a rollout for good: upgrades under way finish, waiting clusters are skipped.
    Abort(RolloutArg),
}
