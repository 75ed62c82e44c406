// SPDX-License-Identifier: GPL-2.0

//! Just enough of a flattened device tree (DTB) reader to find the `riscv,pmu` node of a board's
//! device tree and hand its properties to the driver's parser, as the kernel's OF code would.

use std::collections::BTreeMap;

const FDT_MAGIC: u32 = 0xd00d_feed;
const FDT_BEGIN_NODE: u32 = 1;
const FDT_END_NODE: u32 = 2;
const FDT_PROP: u32 = 3;
const FDT_NOP: u32 = 4;
const FDT_END: u32 = 9;

/// Why a blob is not a readable DTB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FdtError {
    /// The header is missing or its magic number is wrong.
    BadHeader,
    /// A block or token lies outside the blob.
    Truncated,
    /// An unknown structure token.
    BadToken(u32),
}

/// A node: its path and its properties.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// The full path, `/` for the root.
    pub path: String,
    /// Property name to raw value.
    pub props: BTreeMap<String, Vec<u8>>,
}

fn be32(blob: &[u8], off: usize) -> Result<u32, FdtError> {
    blob.get(off..off + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(FdtError::Truncated)
}

fn cstr(blob: &[u8], off: usize) -> Result<String, FdtError> {
    let rest = blob.get(off..).ok_or(FdtError::Truncated)?;
    let end = rest
        .iter()
        .position(|b| *b == 0)
        .ok_or(FdtError::Truncated)?;
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Reads every node of a DTB.
pub fn nodes(blob: &[u8]) -> Result<Vec<Node>, FdtError> {
    if be32(blob, 0).map_err(|_| FdtError::BadHeader)? != FDT_MAGIC {
        return Err(FdtError::BadHeader);
    }
    let struct_off = be32(blob, 8)? as usize;
    let strings_off = be32(blob, 12)? as usize;
    let mut out = Vec::new();
    let mut stack: Vec<Node> = Vec::new();
    let mut pos = struct_off;
    loop {
        let token = be32(blob, pos)?;
        pos += 4;
        match token {
            FDT_BEGIN_NODE => {
                let name = cstr(blob, pos)?;
                pos += (name.len() + 1).div_ceil(4) * 4;
                let path = match stack.last() {
                    None => "/".to_string(),
                    Some(parent) if parent.path == "/" => format!("/{name}"),
                    Some(parent) => format!("{}/{name}", parent.path),
                };
                stack.push(Node {
                    path,
                    props: BTreeMap::new(),
                });
            }
            FDT_END_NODE => out.push(stack.pop().ok_or(FdtError::Truncated)?),
            FDT_PROP => {
                let len = be32(blob, pos)? as usize;
                let nameoff = be32(blob, pos + 4)? as usize;
                let value = blob
                    .get(pos + 8..pos + 8 + len)
                    .ok_or(FdtError::Truncated)?
                    .to_vec();
                pos += 8 + len.div_ceil(4) * 4;
                let name = cstr(blob, strings_off + nameoff)?;
                stack
                    .last_mut()
                    .ok_or(FdtError::Truncated)?
                    .props
                    .insert(name, value);
            }
            FDT_NOP => {}
            FDT_END => return Ok(out),
            other => return Err(FdtError::BadToken(other)),
        }
    }
}

/// The first node whose `compatible` list contains `compatible`.
pub fn find_compatible(blob: &[u8], compatible: &str) -> Result<Option<Node>, FdtError> {
    Ok(nodes(blob)?.into_iter().find(|n| {
        n.props
            .get("compatible")
            .is_some_and(|v| v.split(|b| *b == 0).any(|s| s == compatible.as_bytes()))
    }))
}
