//! The MCP clients `flameox setup` knows: one declaration per client (its
//! name, where its configuration lives per scope, the shape of its server
//! entry and how to tell it is installed). Adding a client is one entry here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{ErrorCode, FlameoxError, Result};

/// Where a client keeps the servers flameox's entry goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// A JSON (or JSONC) object of servers under `servers_key`; `typed`
    /// entries carry `"type": "stdio"`.
    Json {
        servers_key: &'static str,
        typed: bool,
    },
    /// Codex's `config.toml`: a `[mcp_servers.<name>]` table.
    CodexToml,
}

/// Which configuration a setup edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The user's configuration: every project the client opens.
    #[default]
    User,
    /// The project's own configuration file (checked in with it).
    Project,
}

impl Scope {
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "user" => Some(Scope::User),
            "project" => Some(Scope::Project),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// One MCP client.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    /// The name `--client` takes.
    pub name: &'static str,
    pub title: &'static str,
    pub format: ConfigFormat,
    /// The user configuration file, from the host's folders.
    user_config: fn(&Host) -> PathBuf,
    /// The project configuration file, relative to the project root
    /// (`None`: the client reads no project file).
    project_config: Option<&'static str>,
    /// Folders whose presence says the client is installed.
    markers: fn(&Host) -> Vec<PathBuf>,
    /// Commands on PATH that say the client is installed.
    executables: &'static [&'static str],
}

/// Every client, in the order setup reports them.
pub const CLIENTS: &[Client] = &[
    Client {
        name: "claude-code",
        title: "Claude Code",
        format: ConfigFormat::Json {
            servers_key: "mcpServers",
            typed: true,
        },
        user_config: |h| h.home.join(".claude.json"),
        project_config: Some(".mcp.json"),
        markers: |h| vec![h.home.join(".claude"), h.home.join(".claude.json")],
        executables: &["claude"],
    },
    Client {
        name: "claude-desktop",
        title: "Claude Desktop",
        format: ConfigFormat::Json {
            servers_key: "mcpServers",
            typed: false,
        },
        user_config: |h| h.app_config("Claude").join("claude_desktop_config.json"),
        project_config: None,
        markers: |h| vec![h.app_config("Claude")],
        executables: &["claude-desktop"],
    },
    Client {
        name: "cursor",
        title: "Cursor",
        format: ConfigFormat::Json {
            servers_key: "mcpServers",
            typed: false,
        },
        user_config: |h| h.home.join(".cursor").join("mcp.json"),
        project_config: Some(".cursor/mcp.json"),
        markers: |h| vec![h.home.join(".cursor")],
        executables: &["cursor"],
    },
    Client {
        name: "vscode",
        title: "VS Code",
        format: ConfigFormat::Json {
            servers_key: "servers",
            typed: true,
        },
        user_config: |h| h.app_config("Code").join("User").join("mcp.json"),
        project_config: Some(".vscode/mcp.json"),
        markers: |h| vec![h.app_config("Code")],
        executables: &["code"],
    },
    Client {
        name: "windsurf",
        title: "Windsurf",
        format: ConfigFormat::Json {
            servers_key: "mcpServers",
            typed: false,
        },
        user_config: |h| {
            h.home
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json")
        },
        project_config: None,
        markers: |h| vec![h.home.join(".codeium").join("windsurf")],
        executables: &["windsurf"],
    },
    Client {
        name: "codex",
        title: "Codex",
        format: ConfigFormat::CodexToml,
        user_config: |h| h.codex_home.join("config.toml"),
        project_config: Some(".codex/config.toml"),
        markers: |h| vec![h.codex_home.clone()],
        executables: &["codex"],
    },
    Client {
        name: "gemini",
        title: "Gemini CLI",
        format: ConfigFormat::Json {
            servers_key: "mcpServers",
            typed: false,
        },
        user_config: |h| h.home.join(".gemini").join("settings.json"),
        project_config: Some(".gemini/settings.json"),
        markers: |h| vec![h.home.join(".gemini")],
        executables: &["gemini"],
    },
];

/// Looks a client up by its `--client` name.
pub fn find(name: &str) -> Option<&'static Client> {
    CLIENTS.iter().find(|c| c.name == name)
}

/// Every client name, for messages.
pub fn names() -> Vec<&'static str> {
    CLIENTS.iter().map(|c| c.name).collect()
}

impl Client {
    /// The file this client reads for `scope` (`None`: no such scope).
    pub fn config_path(&self, host: &Host, scope: Scope, project_root: &Path) -> Option<PathBuf> {
        match scope {
            Scope::User => Some((self.user_config)(host)),
            Scope::Project => self.project_config.map(|rel| project_root.join(rel)),
        }
    }

    /// How the client was found on this machine (`None`: not installed).
    pub fn detect(&self, host: &Host) -> Option<String> {
        if let Some(marker) = (self.markers)(host).into_iter().find(|m| m.exists()) {
            return Some(format!("found {}", marker.display()));
        }
        self.executables
            .iter()
            .find_map(|exe| host.on_path(exe))
            .map(|path| format!("found {} on PATH", path.display()))
    }
}

/// The folders of this machine the client paths come from (read from the
/// environment once; tests build one around a temporary home).
#[derive(Debug, Clone)]
pub struct Host {
    pub home: PathBuf,
    /// Where desktop applications keep their settings: `~/.config` (or
    /// `$XDG_CONFIG_HOME`) on Linux, `~/Library/Application Support` on
    /// macOS, `%APPDATA%` on Windows.
    pub app_config_root: PathBuf,
    pub codex_home: PathBuf,
    /// Where setup keeps its lock, recovery journal and backups
    /// (`$XDG_STATE_HOME/flameox/setup`, default `~/.local/state/…`).
    pub state_dir: PathBuf,
    /// The folders searched for client executables.
    pub path: Option<OsString>,
}

impl Host {
    /// The host as the environment describes it; `CAPABILITY_UNAVAILABLE`
    /// without a home folder.
    pub fn from_env() -> Result<Host> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME").or_else(|| var("USERPROFILE")).ok_or_else(|| {
            FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                "no home folder: HOME (USERPROFILE on Windows) is not set",
            )
        })?;
        let app_config_root = if cfg!(target_os = "macos") {
            home.join("Library").join("Application Support")
        } else if cfg!(windows) {
            var("APPDATA").unwrap_or_else(|| home.join("AppData").join("Roaming"))
        } else {
            var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"))
        };
        let mut host = Host::with_home(&home);
        host.app_config_root = app_config_root;
        host.codex_home = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
        host.state_dir = var("XDG_STATE_HOME")
            .unwrap_or_else(|| home.join(".local").join("state"))
            .join("flameox")
            .join("setup");
        host.path = std::env::var_os("PATH");
        Ok(host)
    }

    /// Every folder under `home` as on Linux without overrides, and an
    /// empty PATH.
    pub fn with_home(home: &Path) -> Host {
        Host {
            home: home.to_path_buf(),
            app_config_root: home.join(".config"),
            codex_home: home.join(".codex"),
            state_dir: home
                .join(".local")
                .join("state")
                .join("flameox")
                .join("setup"),
            path: None,
        }
    }

    fn app_config(&self, app: &str) -> PathBuf {
        self.app_config_root.join(app)
    }

    fn on_path(&self, exe: &str) -> Option<PathBuf> {
        let path = self.path.as_ref()?;
        std::env::split_paths(path)
            .map(|dir| dir.join(exe))
            .find(|candidate| candidate.is_file())
    }
}
