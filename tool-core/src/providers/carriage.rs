//! What each provider's result format does with the blocks of a [`Content`] result: carried as
//! the provider's own part, carried as text in the envelope, or not carried, and then said so.

use serde_json::Value;

use super::provider::Provider;
use crate::content::{Block, BlockKind, Content, ResourceContents};
use crate::outcome::Outcome;

/// How one block reaches the model through a provider's result format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Carried {
    /// As the provider's own block or part (an Anthropic image block, an OpenAI `input_image`
    /// part, a Gemini `inlineData` part, an MCP content block).
    Native,
    /// Inside the envelope's text (text blocks; resource links outside MCP).
    AsText,
    /// Not carried: the format has no place for it. The envelope tells the model so, in the
    /// block's `not_carried` field.
    NotCarried,
}

/// What a provider's formatter did with each block of one outcome, for the application to act
/// on (send the audio another way, pick another provider). Empty for an outcome that is not a
/// [`Content`] result.
///
/// ```
/// use toolwright::content::{BlockKind, Content};
/// use toolwright::providers::{Carriage, Carried, Provider};
///
/// let content = Content::new().text("chart").image(&[1, 2, 3], "image/png").audio(&[4], "audio/wav");
/// let carriage = Carriage::of(&content, Provider::Anthropic);
/// assert_eq!(carriage.not_carried().collect::<Vec<_>>(), [BlockKind::Audio]);
/// assert!(Carriage::of(&content, Provider::Mcp).is_complete());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carriage {
    provider: Provider,
    blocks: Vec<(BlockKind, Carried)>,
}

impl Carriage {
    /// What `provider`'s result format does with each block of `content`.
    pub fn of(content: &Content, provider: Provider) -> Self {
        Carriage {
            provider,
            blocks: content
                .blocks()
                .iter()
                .map(|block| (block.kind(), carried(provider, block)))
                .collect(),
        }
    }

    /// What `provider`'s formatter does with `outcome`'s blocks (none unless the tool returned
    /// [`Content`]).
    pub fn of_outcome(outcome: &Outcome, provider: Provider) -> Self {
        match outcome.content() {
            Some(content) => Carriage::of(&content, provider),
            None => Carriage {
                provider,
                blocks: Vec::new(),
            },
        }
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Each block's kind and how it is carried, in order.
    pub fn blocks(&self) -> &[(BlockKind, Carried)] {
        &self.blocks
    }

    /// Whether every block reaches the model.
    pub fn is_complete(&self) -> bool {
        self.blocks.iter().all(|(_, c)| *c != Carried::NotCarried)
    }

    /// The kinds of the blocks that do not reach the model.
    pub fn not_carried(&self) -> impl Iterator<Item = BlockKind> + '_ {
        self.blocks
            .iter()
            .filter(|(_, c)| *c == Carried::NotCarried)
            .map(|(kind, _)| *kind)
    }
}

/// The image types Anthropic, OpenAI and Gemini all accept in a tool result.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp"];

/// The table: which provider carries which block, and how.
fn carried(provider: Provider, block: &Block) -> Carried {
    match (provider, block) {
        (Provider::Mcp, _) => Carried::Native,
        (_, Block::Text { .. }) | (_, Block::ResourceLink { .. }) => Carried::AsText,
        // A text resource is text; no tool-result format but MCP's takes arbitrary bytes.
        (
            _,
            Block::Resource {
                resource: ResourceContents::Text { .. },
            },
        ) => Carried::AsText,
        (_, Block::Resource { .. }) => Carried::NotCarried,
        // Chat Completions' tool messages carry text only.
        (Provider::OpenAi, _) => Carried::NotCarried,
        (_, Block::Image { mime_type, .. }) if IMAGE_TYPES.contains(&mime_type.as_str()) => {
            Carried::Native
        }
        // No tool-result format but MCP's takes audio; an image of another type is refused by
        // the provider's API.
        _ => Carried::NotCarried,
    }
}

/// An image or sound to attach as the provider's own part.
pub(crate) struct Media {
    pub(crate) data: String,
    pub(crate) mime_type: String,
}

/// A content outcome as a provider's formatter sends it: the envelope, each binary block's
/// `data` replaced by `"attached": true` (it follows as a part) or by `not_carried` (why not),
/// and the media to attach.
pub(crate) struct Rendered {
    pub(crate) envelope: Value,
    pub(crate) media: Vec<Media>,
}

impl Rendered {
    pub(crate) fn text(&self) -> String {
        self.envelope.to_string()
    }
}

/// `None` unless the outcome is a [`Content`] result.
pub(crate) fn render(outcome: &Outcome, provider: Provider) -> Option<Rendered> {
    let content = outcome.content()?;
    let mut envelope = outcome.to_model_json();
    let mut media = Vec::new();
    let mut shown = Vec::with_capacity(content.blocks().len());
    for block in content.blocks() {
        let mut value = serde_json::to_value(block).unwrap_or(Value::Null);
        if let (Block::Image { data, mime_type } | Block::Audio { data, mime_type }, Some(obj)) =
            (block, value.as_object_mut())
        {
            obj.remove("data");
            match carried(provider, block) {
                Carried::Native => {
                    obj.insert("attached".into(), Value::Bool(true));
                    media.push(Media {
                        data: data.clone(),
                        mime_type: mime_type.clone(),
                    });
                }
                _ => {
                    let why = format!(
                        "{} cannot carry {} ({mime_type}) in a tool result; it was not sent",
                        provider.name(),
                        block.kind().as_str(),
                    );
                    obj.insert("not_carried".into(), Value::String(why));
                }
            }
        }
        if let (
            Block::Resource {
                resource: ResourceContents::Blob { mime_type, .. },
            },
            Some(resource),
        ) = (
            block,
            value.get_mut("resource").and_then(Value::as_object_mut),
        ) {
            if carried(provider, block) == Carried::NotCarried {
                resource.remove("blob");
                let why = format!(
                    "{} cannot carry an embedded resource's bytes ({}) in a tool result; they were not sent",
                    provider.name(),
                    mime_type.as_deref().unwrap_or("of no stated type"),
                );
                resource.insert("not_carried".into(), Value::String(why));
            }
        }
        shown.push(value);
    }
    if let Some(data) = envelope.get_mut("data").and_then(Value::as_object_mut) {
        data.insert("content".into(), Value::Array(shown));
    }
    Some(Rendered { envelope, media })
}
