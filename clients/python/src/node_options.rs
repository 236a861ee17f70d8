//! `raftlock.Node`'s keyword arguments: `raftlock serve`'s options, named
//! as its flags with `_` for `-`, turned into those flags and read by the
//! command line's own parser (`raftlock_cli::serve_config`), so keywords,
//! flags, `RAFTLOCK_*` variables and the TOML file fill one `Config` the
//! same way.

use pyo3::prelude::*;
use raftlock::Config;
use raftlock_cli::{serve_config, serve_options, ServeOption};
use raftlock_client::Error;

/// One keyword's value as the Python side hands it over: a switch's
/// `True`/`False`, or any other value as text (paths, numbers and lists
/// already written as `raftlock serve` reads them).
#[derive(FromPyObject)]
pub enum OptionValue {
    Switch(bool),
    Text(String),
}

/// The keyword of a flag: `initial-cluster` → `initial_cluster`.
fn keyword(flag: &str) -> String {
    flag.replace('-', "_")
}

/// The names of every option, for messages and `raftlock.Node.options()`.
pub fn option_names() -> Vec<(String, bool, String)> {
    serve_options()
        .into_iter()
        .map(|o| (keyword(&o.flag), o.switch, o.help))
        .collect()
}

/// The config the keywords describe, over `RAFTLOCK_*` variables, the
/// `config=` file and the defaults. Every mistake is an `InvalidArgument`
/// naming the keyword, and nothing is started.
pub fn config_from(options: Vec<(String, OptionValue)>) -> Result<Config, Error> {
    let known = serve_options();
    let mut argv = Vec::new();
    for (name, value) in options {
        let flag = name.replace('_', "-");
        let Some(option) = known
            .iter()
            .find(|o| o.flag == flag && keyword(&o.flag) == name)
        else {
            let names: Vec<String> = known.iter().map(|o| keyword(&o.flag)).collect();
            return Err(Error::InvalidArgument(format!(
                "raftlock.Node has no option {name}=; it takes the options of `raftlock serve`: {}",
                names.join(", ")
            )));
        };
        match (option.switch, value) {
            (true, OptionValue::Switch(true)) => argv.push(format!("--{flag}")),
            (true, OptionValue::Switch(false)) => {}
            (true, OptionValue::Text(text)) => {
                return Err(Error::InvalidArgument(format!(
                    "{name}= is True or False, not {text:?}"
                )))
            }
            (false, OptionValue::Switch(b)) => {
                return Err(Error::InvalidArgument(format!(
                    "{name}= takes a value, not {}",
                    if b { "True" } else { "False" }
                )))
            }
            (false, OptionValue::Text(text)) => argv.push(format!("--{flag}={text}")),
        }
    }
    serve_config(argv).map_err(|message| Error::InvalidArgument(python_names(&message, &known)))
}

/// `message` with each `--flag` (and clap's `--flag <VALUE>`) written as
/// the keyword `flag=` that a Python caller passes.
fn python_names(message: &str, known: &[ServeOption]) -> String {
    let mut flags: Vec<&str> = known.iter().map(|o| o.flag.as_str()).collect();
    // `--join-token` before `--join`.
    flags.sort_by_key(|f| std::cmp::Reverse(f.len()));
    let mut out = message.to_owned();
    for flag in flags {
        let kw = keyword(flag);
        let value_name = kw.to_uppercase();
        out = out
            .replace(&format!("--{flag} <{value_name}>"), &format!("{kw}="))
            .replace(&format!("--{flag}"), &format!("{kw}="));
    }
    out
}
