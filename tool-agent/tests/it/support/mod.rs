pub mod fake_provider;
