use chrono::{DateTime, Utc};
use crudforge::files::{File, FileList};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = albums)]
pub struct Album {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"], thumbs = ["0x10"]))]
    //~^ ERROR each side is 1 to 4096 pixels
    pub cover: Option<File>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"], thumbs = ["big"]))]
    //~^ ERROR is not a box
    pub back: Option<File>,
    #[resource(file(max_size = "1 MiB", types = ["image/png", "application/pdf"], thumbs = ["64x64"]))]
    //~^ ERROR `thumbs` needs images a thumbnail can be made from
    pub booklet: Option<File>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"]))]
    //~^ ERROR a `FileList` member says how many files it holds
    pub pages: Option<FileList>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"], max_count = 3))]
    //~^ ERROR `max_count` is for a list of files
    pub poster: Option<File>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"], max_count = 0))]
    //~^ ERROR `max_count` is a number of files from 1 to 100
    pub sleeve: Option<FileList>,
    #[resource(file(max_size = "1 MiB", types = ["image/png"], max_count = 2))]
    pub notes: String,
    //~^ ERROR a list of files is an `Option<crudforge::files::FileList>`
}

fn main() {}
