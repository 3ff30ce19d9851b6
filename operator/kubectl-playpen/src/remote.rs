//! Commands in a container of the session's Pod (`pods/exec`), streamed to
//! the terminal or captured, with the remote exit code.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::connect::Cluster;
use crate::error::{Error, Result};
use crate::forbidden;
use crate::rbac::Attempt;

/// Bytes buffered per stream between the WebSocket and the reader.
const BUFFER: usize = 256 * 1024;

/// A container in a session's Pod.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// The cluster and namespace.
    pub cluster: &'a Cluster,
    /// `ns/name` of the BrowserSession, for messages.
    pub session: String,
    /// The Pod.
    pub pod: String,
    /// The container.
    pub container: &'static str,
}

/// The exit code a finished exec's status carries, or why there is none.
pub fn exit_code(status: Option<&Status>) -> std::result::Result<i32, String> {
    let Some(status) = status else {
        return Err("the command's exit status never arrived (the connection ended early)".to_owned());
    };
    if status.status.as_deref() == Some("Success") {
        return Ok(0);
    }
    if status.reason.as_deref() == Some("NonZeroExitCode") {
        let code = status
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|causes| causes.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.as_deref())
            .and_then(|m| m.trim().parse::<i32>().ok());
        return code.ok_or_else(|| {
            format!("the command failed without an exit code: {}", status.message.as_deref().unwrap_or(""))
        });
    }
    Err(status.message.clone().unwrap_or_else(|| format!("the command failed: {status:?}")))
}

async fn pump<R, W>(reader: Option<R>, mut writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Some(mut reader) = reader else { return Ok(()) };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return writer.flush().await;
        }
        writer.write_all(&buf[..n]).await?;
        writer.flush().await?;
    }
}

/// A writer that keeps the first `limit` bytes and drops the rest.
#[derive(Debug)]
pub struct Capped {
    /// What was kept.
    pub kept: Vec<u8>,
    limit: usize,
}

impl Capped {
    /// Keeps at most `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self { kept: Vec::new(), limit: usize::try_from(limit).unwrap_or(usize::MAX) }
    }
}

impl AsyncWrite for Capped {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let room = this.limit.saturating_sub(this.kept.len());
        this.kept.extend_from_slice(&buf[..buf.len().min(room)]);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl Target<'_> {
    fn api(&self) -> Api<Pod> {
        Api::namespaced(self.cluster.client.clone(), &self.cluster.namespace)
    }

    fn exec_error(&self, err: kube::Error) -> Error {
        let ns = self.cluster.namespace.as_str();
        if let kube::Error::Api(status) = &err {
            if status.is_not_found() {
                return Error::PodMissing {
                    pod: self.pod.clone(),
                    session: self.session.clone(),
                    namespace: ns.to_owned(),
                };
            }
        }
        let action = format!("exec in {ns}/{} container {}", self.pod, self.container);
        // The WebSocket upgrade is a GET; the server's message names the verb it checked.
        forbidden::kube_error(err, &Attempt::pods("get", Some("exec"), ns), action)
    }

    /// Runs `command`, copying its stdout and stderr into `out` and `err`; its exit code.
    pub async fn exec_into<O, E>(&self, command: &[String], out: O, err: E) -> Result<i32>
    where
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        let params = AttachParams::default()
            .container(self.container)
            .stdin(false)
            .stdout(true)
            .stderr(true)
            .max_stdout_buf_size(BUFFER)
            .max_stderr_buf_size(BUFFER);
        let mut process =
            self.api().exec(&self.pod, command.to_vec(), &params).await.map_err(|e| self.exec_error(e))?;
        let status = process.take_status();
        let (copied_out, copied_err, status) =
            tokio::join!(pump(process.stdout(), out), pump(process.stderr(), err), async {
                match status {
                    Some(status) => status.await,
                    None => None,
                }
            });
        let joined = process.join().await;
        copied_out.map_err(Error::io("writing the command's output"))?;
        copied_err.map_err(Error::io("writing the command's error output"))?;
        match exit_code(status.as_ref()) {
            Ok(code) => Ok(code),
            Err(why) => {
                let tail = joined.err().map(|e| format!(" ({e})")).unwrap_or_default();
                Err(Error::Remote(format!("{} in {}/{}: {why}{tail}", command.join(" "), self.pod, self.container)))
            }
        }
    }

    /// Runs `command` and returns its stdout; fails (with its stderr) unless it exits 0.
    pub async fn capture(&self, command: &[String]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = self.exec_into(command, &mut out, &mut err).await?;
        if code != 0 {
            return Err(Error::Remote(format!(
                "`{}` in Pod {} exited {code}: {}",
                command.join(" "),
                self.pod,
                String::from_utf8_lossy(&err).trim()
            )));
        }
        Ok(out)
    }

    /// [`Self::capture`], keeping at most `limit` bytes of the output: what
    /// a container sends past it is read and dropped, so a hostile one
    /// cannot make this process hold more.
    pub async fn capture_at_most(&self, command: &[String], limit: u64) -> Result<Vec<u8>> {
        let mut out = Capped::new(limit);
        let mut err = Capped::new(64 * 1024);
        let code = self.exec_into(command, &mut out, &mut err).await?;
        if code != 0 {
            return Err(Error::Remote(format!(
                "`{}` in Pod {} exited {code}: {}",
                command.join(" "),
                self.pod,
                crate::output::untrusted(String::from_utf8_lossy(&err.kept).trim(), false)
            )));
        }
        Ok(out.kept)
    }

    /// Runs `command` with its output on this terminal; its exit code.
    pub async fn stream(&self, command: &[String]) -> Result<i32> {
        self.exec_into(command, tokio::io::stdout(), tokio::io::stderr()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{StatusCause, StatusDetails};

    fn failure(reason: &str, message: &str, causes: Vec<(&str, &str)>) -> Status {
        Status {
            status: Some("Failure".into()),
            reason: Some(reason.into()),
            message: Some(message.into()),
            details: Some(StatusDetails {
                causes: Some(
                    causes
                        .into_iter()
                        .map(|(r, m)| StatusCause { reason: Some(r.into()), message: Some(m.into()), field: None })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn success_is_zero() {
        let ok = Status { status: Some("Success".into()), ..Default::default() };
        assert_eq!(exit_code(Some(&ok)), Ok(0));
    }

    #[test]
    fn non_zero_exit_codes_come_from_the_exit_code_cause() {
        let s = failure(
            "NonZeroExitCode",
            "command terminated with non-zero exit code: error executing command [false], exit code 3",
            vec![("ExitCode", "3")],
        );
        assert_eq!(exit_code(Some(&s)), Ok(3));
        let s = failure("NonZeroExitCode", "x", vec![("Other", "9"), ("ExitCode", " 127 ")]);
        assert_eq!(exit_code(Some(&s)), Ok(127));
    }

    #[test]
    fn missing_or_garbled_codes_are_errors() {
        assert!(exit_code(None).unwrap_err().contains("never arrived"));
        let s = failure("NonZeroExitCode", "boom", vec![("ExitCode", "three")]);
        assert!(exit_code(Some(&s)).unwrap_err().contains("without an exit code: boom"));
        let s = failure("NonZeroExitCode", "boom", vec![]);
        assert!(exit_code(Some(&s)).is_err());
        let s = failure("InternalError", "exec: \"playwright-cli\": executable file not found in $PATH", vec![]);
        assert_eq!(exit_code(Some(&s)).unwrap_err(), "exec: \"playwright-cli\": executable file not found in $PATH");
    }

    #[tokio::test]
    async fn a_capped_writer_keeps_the_first_bytes_and_swallows_the_rest() {
        let mut capped = Capped::new(5);
        pump(Some(&b"hello, world"[..]), &mut capped).await.unwrap();
        assert_eq!(capped.kept, b"hello");
        let mut none = Capped::new(0);
        pump(Some(&b"x"[..]), &mut none).await.unwrap();
        assert!(none.kept.is_empty());
    }

    #[tokio::test]
    async fn pump_copies_everything_and_tolerates_no_stream() {
        let mut out = Vec::new();
        pump(Some(&b"hello\nworld"[..]), &mut out).await.unwrap();
        assert_eq!(out, b"hello\nworld");
        let mut none = Vec::new();
        pump(None::<&[u8]>, &mut none).await.unwrap();
        assert!(none.is_empty());
    }
}
