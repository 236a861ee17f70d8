//! `raftlock serve`'s options for a node started by another program (the
//! Python package's `raftlock.Node`): their names, and the config a list
//! of them describes, read by the same parser as the command line, so
//! flags, `RAFTLOCK_*` variables, the TOML file and embedded nodes share one
//! mapping onto [`Config`].

use std::ffi::OsString;

use clap::{ArgAction, Args, Parser};
use raftlock::Config;

use super::serve::ServeArgs;

/// Arguments that are actions of the command, not settings of a node.
const NOT_SETTINGS: [&str; 2] = ["print-config", "help"];

/// One option of `raftlock serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOption {
    /// The flag's name without its dashes (`initial-cluster`).
    pub flag: String,
    /// Whether it is a switch (`--join`) rather than a flag with a value.
    pub switch: bool,
    /// Whether its value is a comma-separated list (`--initial-cluster`).
    pub list: bool,
    /// Its one-line help.
    pub help: String,
}

/// The settings of `raftlock serve`, in the order `--help` lists them.
pub fn serve_options() -> Vec<ServeOption> {
    let command = ServeArgs::augment_args(clap::Command::new("serve"));
    command
        .get_arguments()
        .filter_map(|arg| {
            let flag = arg.get_long()?;
            if NOT_SETTINGS.contains(&flag) {
                return None;
            }
            Some(ServeOption {
                flag: flag.to_owned(),
                switch: matches!(arg.get_action(), ArgAction::SetTrue),
                list: arg.get_value_delimiter().is_some(),
                help: arg
                    .get_help()
                    .map(|h| h.to_string().lines().next().unwrap_or("").to_owned())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// `raftlock serve`'s flags alone, for [`serve_config`].
#[derive(Debug, Parser)]
#[command(name = "serve", no_binary_name = true, disable_help_flag = true)]
struct ServeFlags {
    #[command(flatten)]
    args: ServeArgs,
}

/// The config `raftlock serve ARGS` would run with (`args` without the
/// program's name or `serve`): flags over `RAFTLOCK_*` variables over the
/// `--config` file over defaults, validated. `--print-config` is refused.
/// The error is the parser's or the validation's message, naming flags.
pub fn serve_config<I, T>(args: I) -> Result<Config, String>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let flags = ServeFlags::try_parse_from(args.into_iter().map(Into::into)).map_err(|e| {
        let rendered = e.render().to_string();
        let first = rendered.lines().next().unwrap_or("invalid options");
        first.trim_start_matches("error: ").to_owned()
    })?;
    if flags.args.print_config_requested() {
        return Err("--print-config is a command, not a setting".to_owned());
    }
    flags.args.to_config()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_the_flags_of_serve() {
        let options = serve_options();
        let find = |flag: &str| options.iter().find(|o| o.flag == flag);
        assert!(find("print-config").is_none());
        assert!(find("join").is_some_and(|o| o.switch && !o.list));
        assert!(find("initial-cluster").is_some_and(|o| o.list && !o.switch));
        assert!(find("heartbeat-ms").is_some_and(|o| !o.switch));
        assert!(find("config").is_some());
    }

    #[test]
    fn flags_fill_the_config_and_bad_ones_are_named() {
        let config = serve_config(["--id", "2", "--heartbeat-ms", "40", "--insecure"]).unwrap();
        assert_eq!(config.replication.id, 2);
        assert_eq!(
            config.replication.heartbeat,
            std::time::Duration::from_millis(40)
        );
        assert!(config.replication.insecure);
        let bad = serve_config(["--id", "x"]).unwrap_err();
        assert!(bad.contains("--id"), "{bad}");
        let unknown = serve_config(["--no-such"]).unwrap_err();
        assert!(unknown.contains("--no-such"), "{unknown}");
        let invalid = serve_config(["--id", "0"]).unwrap_err();
        assert!(invalid.contains("at least 1"), "{invalid}");
        assert!(serve_config(["--print-config"]).is_err());
    }
}
