use chrono::{DateTime, Utc};
use crudforge::files::File;
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = albums)]
pub struct Album {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(file(max_size = "5 MiB", types = ["image/svg+xml"]))]
    //~^ ERROR `image/svg+xml` is not a media type the server can recognize
    pub cover: Option<File>,
    #[resource(file(max_size = "5 MB", types = ["image/png"]))]
    //~^ ERROR `MB` is not a unit
    pub back: Option<File>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"]), filter = true)]
    //~^ ERROR `file(...)` and `filter = true` do not combine
    pub thumb: Option<File>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"]))]
    pub title: String,
    //~^ ERROR a file member is an `Option<crudforge::files::File>`
    pub booklet: Option<File>,
    //~^ ERROR `booklet` holds a file but does not say which
    #[resource(file(types = ["image/png"]))]
    //~^ ERROR `file(...)` needs `max_size`
    pub poster: Option<File>,
}

fn main() {}
