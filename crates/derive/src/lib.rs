//! `#[derive(Module)]` for `rustgrad::nn` (see Note [Rust modules] in
//! docs/architecture.md).
//!
//! The derive implements `rustgrad::nn::Members` for a struct with named fields: it
//! lists the struct's own parameters, buffers and submodules, each under its field's
//! name, in declaration order (the order of PyTorch's `__init__` assignments, which is
//! the order of `named_parameters` and `state_dict`). Fields are classified by an
//! attribute, and by nothing else:
//!
//! - `#[param]`: a parameter (`Variable`, or `Option<Variable>` for an optional one such
//!   as a bias);
//! - `#[buffer]`: a persistent buffer (`Variable` or `Option<Variable>`);
//!   `#[buffer(missing_ok)]` one that a state dict may lack (`num_batches_tracked`);
//! - `#[skip]`: not part of the tree (hyper-parameters, cached sizes);
//! - a field whose type is `Training`: the module's own train/eval flag;
//! - anything else: a submodule (a type implementing `Module`, or `Option<...>` of
//!   one, which is absent from the tree while `None`, as PyTorch's `None` submodules).
//!
//! The forward pass is not derived: implement `rustgrad::nn::Module` (its one required
//! method, `forward`) by hand.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, Type};

/// What a field is to the module tree.
enum Kind {
    Param,
    Buffer,
    OptionalBuffer,
    Skip,
    Training,
    Child,
}

/// Whether the last segment of `ty`'s path is `name` (`Option`, `Training`).
fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == name),
        _ => false,
    }
}

/// `#[derive(Module)]`: implements `rustgrad::nn::Members` (see the crate docs for the
/// field attributes `#[param]`, `#[buffer]` and `#[skip]`).
#[proc_macro_derive(Module, attributes(param, buffer, skip))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let name = &input.ident;
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(_) => {
                return syn::Error::new_spanned(
                    name,
                    "#[derive(Module)] needs named fields: their names are the parameter names",
                )
                .to_compile_error()
                .into();
            }
        },
        _ => {
            return syn::Error::new_spanned(name, "#[derive(Module)] works on structs only")
                .to_compile_error()
                .into();
        }
    };
    let mut visits = Vec::new();
    let mut flag = quote! { ::core::option::Option::None };
    for field in fields {
        let ident = field.ident.as_ref().expect("named field");
        let key = ident.to_string();
        let has = |attr: &str| field.attrs.iter().any(|a| a.path().is_ident(attr));
        let kind = if has("skip") {
            Kind::Skip
        } else if has("param") {
            Kind::Param
        } else if has("buffer") {
            let missing_ok = field.attrs.iter().any(|a| {
                a.path().is_ident("buffer")
                    && a.parse_args::<syn::Ident>()
                        .is_ok_and(|i| i == "missing_ok")
            });
            if missing_ok {
                Kind::OptionalBuffer
            } else {
                Kind::Buffer
            }
        } else if last_segment_is(&field.ty, "Training") {
            Kind::Training
        } else {
            Kind::Child
        };
        let optional = last_segment_is(&field.ty, "Option");
        let member = match kind {
            Kind::Skip => continue,
            Kind::Training => {
                flag = quote! { ::core::option::Option::Some(&self.#ident) };
                continue;
            }
            Kind::Param => quote! { ::rustgrad::nn::Member::Parameter(value) },
            Kind::Buffer => quote! { ::rustgrad::nn::Member::Buffer(value) },
            Kind::OptionalBuffer => quote! { ::rustgrad::nn::Member::OptionalBuffer(value) },
            Kind::Child => quote! { ::rustgrad::nn::Member::Child(value) },
        };
        visits.push(if optional {
            quote! {
                if let ::core::option::Option::Some(value) = &self.#ident {
                    visit(#key, #member);
                }
            }
        } else {
            quote! {
                {
                    let value = &self.#ident;
                    visit(#key, #member);
                }
            }
        });
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::rustgrad::nn::Members for #name #ty_generics #where_clause {
            fn visit_members<'s>(&'s self, visit: &mut dyn FnMut(&str, ::rustgrad::nn::Member<'s>)) {
                #(#visits)*
            }
            fn training_flag(&self) -> ::core::option::Option<&::rustgrad::nn::Training> {
                #flag
            }
        }
    }
    .into()
}
