//! Results beyond JSON: a tool that returns [`Content`] answers with blocks of text, images,
//! audio and links to resources, next to JSON data or instead of it.
//!
//! The blocks have MCP's shapes (MCP 2025-11-25, "Tool Result": `text`, `image`, `audio` with
//! base64 `data` and `mimeType`, `resource_link`, and `resource`: an embedded resource with its
//! `text` or its base64 `blob`), so an MCP client receives them as they are.
//! The other providers' formatters carry what their result formats accept (Anthropic
//! `tool_result` image blocks, OpenAI Responses `input_image` parts, Gemini function-response
//! parts) and say what they cannot carry, to the model in the envelope and to the application
//! in a [`Carriage`](crate::providers::Carriage) — never a silent drop.
//!
//! ```
//! use toolwright::content::{Block, Content};
//!
//! let png: &[u8] = &[0x89, b'P', b'N', b'G'];
//! let content = Content::new()
//!     .text("Revenue by month, 2025.")
//!     .image(png, "image/png")
//!     .resource_link("https://example.com/reports/2025.csv", "2025.csv")
//!     .data(serde_json::json!({"months": 12}));
//! assert_eq!(content.blocks().len(), 3);
//! assert!(matches!(&content.blocks()[1], Block::Image { data, .. } if data == "iVBORw=="));
//! ```
//!
//! A `#[tool]` returns it like any other output (`Result<Content, ToolError>`); its output
//! schema is `Content`'s, so it stays true.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of a tool's result, in MCP's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image, base64-encoded (standard alphabet, padded).
        data: String,
        /// Its media type, for example `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The audio, base64-encoded (standard alphabet, padded).
        data: String,
        /// Its media type, for example `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client can fetch.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its media type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A resource embedded in the result: its contents travel with it.
    Resource {
        /// The resource: its URI and its text or bytes.
        resource: ResourceContents,
    },
}

/// The contents of an embedded resource ([`Block::Resource`]), as MCP's
/// `TextResourceContents` or `BlobResourceContents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ResourceContents {
    /// A resource whose contents are text.
    Text {
        /// The resource's URI.
        uri: String,
        /// Its media type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its text.
        text: String,
    },
    /// A resource whose contents are bytes.
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its media type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its bytes, base64-encoded (standard alphabet, padded).
        blob: String,
    },
}

impl Block {
    /// Which kind of block this is.
    pub fn kind(&self) -> BlockKind {
        match self {
            Block::Text { .. } => BlockKind::Text,
            Block::Image { .. } => BlockKind::Image,
            Block::Audio { .. } => BlockKind::Audio,
            Block::ResourceLink { .. } => BlockKind::ResourceLink,
            Block::Resource { .. } => BlockKind::Resource,
        }
    }
}

/// The kinds of [`Block`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockKind {
    /// [`Block::Text`].
    Text,
    /// [`Block::Image`].
    Image,
    /// [`Block::Audio`].
    Audio,
    /// [`Block::ResourceLink`].
    ResourceLink,
    /// [`Block::Resource`].
    Resource,
}

impl BlockKind {
    /// The block's `type` tag: `text`, `image`, `audio`, `resource_link`, `resource`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BlockKind::Text => "text",
            BlockKind::Image => "image",
            BlockKind::Audio => "audio",
            BlockKind::ResourceLink => "resource_link",
            BlockKind::Resource => "resource",
        }
    }
}

/// A tool result made of [`Block`]s, with optional JSON `data` beside them. See the
/// [module](self) docs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Content {
    /// The blocks, in the order the model should see them.
    content: Vec<Block>,
    /// JSON data next to the blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

impl Content {
    /// No blocks, no data.
    pub fn new() -> Self {
        Content::default()
    }

    /// Adds a block.
    pub fn block(mut self, block: Block) -> Self {
        self.content.push(block);
        self
    }

    /// Adds a text block.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.block(Block::Text { text: text.into() })
    }

    /// Adds an image from its bytes (base64-encoded here) and media type.
    pub fn image(self, bytes: &[u8], mime_type: impl Into<String>) -> Self {
        self.block(Block::Image {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        })
    }

    /// Adds a sound from its bytes (base64-encoded here) and media type.
    pub fn audio(self, bytes: &[u8], mime_type: impl Into<String>) -> Self {
        self.block(Block::Audio {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        })
    }

    /// Adds a link to a resource.
    pub fn resource_link(self, uri: impl Into<String>, name: impl Into<String>) -> Self {
        self.block(Block::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
            description: None,
        })
    }

    /// Embeds a resource whose contents are text, with its media type.
    pub fn resource_text(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.block(Block::Resource {
            resource: ResourceContents::Text {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: text.into(),
            },
        })
    }

    /// Embeds a resource whose contents are bytes (base64-encoded here), with its media type.
    pub fn resource_blob(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: &[u8],
    ) -> Self {
        self.block(Block::Resource {
            resource: ResourceContents::Blob {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                blob: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
        })
    }

    /// Sets the JSON data that goes with the blocks.
    pub fn data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The blocks.
    pub fn blocks(&self) -> &[Block] {
        &self.content
    }

    /// The JSON data, if any.
    pub fn json(&self) -> Option<&Value> {
        self.data.as_ref()
    }
}
